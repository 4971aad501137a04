// tests/frontend/distributed/collectives_worker.cpp - one rank of the
// collective tests (started by process_group_test through launch()).
//
// Every rank can compute every rank's input (value(rank, i) below), so each
// checks its result against a single-process computation in double on the
// host: the oracle never goes through Genesis's reductions.  The inputs are
// small integers, so every sum/product/average is exact in every dtype and the
// comparison is exact.  Prints one line per mismatch; exit code 1 if any.
//
// Cases (argv[1]): collectives, peer_exit, peer_silent, killed, exit_code.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "genesis/distributed.hpp"

namespace dist = genesis::distributed;
using genesis::DType;
using genesis::Tensor;

namespace {

int g_failures = 0;

void expect(bool ok, const std::string& what) {
  if (ok) return;
  ++g_failures;
  dist::log("FAIL: " + what);
}

const std::vector<DType> kDtypes = {DType::f32, DType::f64, DType::f16, DType::bf16,   DType::i8,
                                    DType::u8,  DType::i32, DType::i64, DType::boolean};
const std::vector<int64_t> kSizes = {1, 13, 4099, 65537};

// Rank r's element i: in -2..2 (0..4 unsigned, 0/1 bool).
double value(int r, int64_t i, DType d) {
  if (d == DType::boolean) return (i + r) % 3 == 0 ? 1 : 0;
  const double v = double((i * 7 + r * 13) % 5);
  return d == DType::u8 ? v : v - 2;
}

// The device the world group moves ($GENESIS_DIST_DEVICE: cpu for gloo, cuda for nccl).
genesis::Device device() { return dist::world().device(); }

Tensor input(int r, int64_t n, DType d, int64_t offset = 0) {
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = value(r, i + offset, d);
  return genesis::tensor(v, {n}).to(d).to(device());
}

Tensor zeros_on(genesis::Shape shape, DType d) { return genesis::zeros(std::move(shape), {d, device()}); }

double combine(dist::ReduceOp op, const std::vector<double>& xs, DType d) {
  double acc = xs[0];
  for (size_t k = 1; k < xs.size(); ++k) {
    switch (op) {
      case dist::ReduceOp::sum:
      case dist::ReduceOp::avg: acc += xs[k]; break;
      case dist::ReduceOp::prod: acc *= xs[k]; break;
      case dist::ReduceOp::max: acc = std::max(acc, xs[k]); break;
      case dist::ReduceOp::min: acc = std::min(acc, xs[k]); break;
    }
  }
  if (op == dist::ReduceOp::avg) acc /= double(xs.size());
  if (d == DType::boolean) {  // sum/max = or, prod/min = and
    bool any = false, all = true;
    for (double x : xs) any = any || x != 0, all = all && x != 0;
    acc = (op == dist::ReduceOp::sum || op == dist::ReduceOp::max) ? any : all;
  }
  return acc;
}

const char* op_name(dist::ReduceOp op) {
  const char* names[] = {"sum", "prod", "max", "min", "avg"};
  return names[(int)op];
}

// Compare t with want(i) for every element.
void check_values(const Tensor& t, const std::function<double(int64_t)>& want, const std::string& what) {
  std::vector<double> got = t.to(DType::f64).tolist();
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != want((int64_t)i)) {
      expect(false, what + ": element " + std::to_string(i) + " is " + std::to_string(got[i]) + ", expected " +
                        std::to_string(want((int64_t)i)));
      return;
    }
}

void test_all_reduce(dist::ProcessGroup& g, const std::vector<int>& members) {
  const std::vector<dist::ReduceOp> ops = {dist::ReduceOp::sum, dist::ReduceOp::prod, dist::ReduceOp::max,
                                           dist::ReduceOp::min, dist::ReduceOp::avg};
  const int me = members[g.rank()];
  for (DType d : kDtypes)
    for (dist::ReduceOp op : ops)
      for (int64_t n : kSizes) {
        const std::string what = std::string("all_reduce ") + op_name(op) + " " + genesis::dtype_name(d) +
                                 " n=" + std::to_string(n) + " group of " + std::to_string(g.size());
        Tensor t = input(me, n, d);
        if (op == dist::ReduceOp::avg && !genesis::is_floating(d)) {
          try {
            g.all_reduce(t, op);
            expect(false, what + ": no error for an integer average");
          } catch (const genesis::Error& e) {
            expect(e.code() == GN_ERR_DTYPE, what + ": wrong code " + std::to_string(e.code()) + " " + e.what());
          }
          continue;
        }
        g.all_reduce(t, op);
        check_values(
            t,
            [&](int64_t i) {
              std::vector<double> xs;
              for (int r : members) xs.push_back(value(r, i, d));
              return combine(op, xs, d);
            },
            what);
      }
}

void test_data_movement(dist::ProcessGroup& g) {
  const int ws = g.size(), me = g.rank();
  for (DType d : kDtypes)
    for (int64_t n : kSizes) {
      const std::string tag = std::string(genesis::dtype_name(d)) + " n=" + std::to_string(n);
      for (int root = 0; root < ws; ++root) {
        Tensor t = input(me, n, d);
        g.broadcast(t, root);
        check_values(
            t, [&](int64_t i) { return value(root, i, d); }, "broadcast root " + std::to_string(root) + " " + tag);
      }
      Tensor out = zeros_on({ws, n}, d);
      g.all_gather_into_tensor(out, input(me, n, d));
      check_values(
          out, [&](int64_t i) { return value((int)(i / n), i % n, d); }, "all_gather " + tag);
      // all_to_all: rank r's chunk j carries value(r, j*n + k); chunk i of the result comes from rank i.
      Tensor a2a = zeros_on({ws * n}, d);
      g.all_to_all_single(a2a, input(me, ws * n, d));
      check_values(
          a2a, [&](int64_t i) { return value((int)(i / n), me * n + i % n, d); }, "all_to_all " + tag);
      // reduce_scatter: sum over ranks of the rank's chunk.
      Tensor rs = zeros_on({n}, d);
      g.reduce_scatter_tensor(rs, input(me, ws * n, d), dist::ReduceOp::sum);
      check_values(
          rs,
          [&](int64_t i) {
            std::vector<double> xs;
            for (int r = 0; r < ws; ++r) xs.push_back(value(r, me * n + i, d));
            return combine(dist::ReduceOp::sum, xs, d);
          },
          "reduce_scatter sum " + tag);
      // send/recv around the ring: even ranks send first, odd ranks receive first.
      if (ws == 1) continue;  // no peer
      Tensor got = zeros_on({n}, d);
      const int next = (me + 1) % ws, prev = (me + ws - 1) % ws;
      if (me % 2 == 0) {
        g.send(input(me, n, d), next, 7);
        g.recv(got, prev, 7);
      } else {
        g.recv(got, prev, 7);
        g.send(input(me, n, d), next, 7);
      }
      check_values(
          got, [&](int64_t i) { return value(prev, i, d); }, "send/recv " + tag);
    }
  // reduce_scatter with every op, f32 and i32.
  for (DType d : {DType::f32, DType::i32})
    for (dist::ReduceOp op : {dist::ReduceOp::prod, dist::ReduceOp::max, dist::ReduceOp::min}) {
      const int64_t n = 37;
      Tensor rs = zeros_on({n}, d);
      g.reduce_scatter_tensor(rs, input(me, ws * n, d), op);
      check_values(
          rs,
          [&](int64_t i) {
            std::vector<double> xs;
            for (int r = 0; r < ws; ++r) xs.push_back(value(r, me * n + i, d));
            return combine(op, xs, d);
          },
          std::string("reduce_scatter ") + op_name(op) + " " + genesis::dtype_name(d));
    }
}

void test_layouts_and_async(dist::ProcessGroup& g) {
  const int ws = g.size(), me = g.rank();
  // A non-contiguous tensor (a transposed view) is reduced in place through a copy.
  Tensor base = input(me, 6 * 5, DType::f32).reshape({6, 5}).contiguous();
  Tensor view = base.t();  // (5, 6), strides (1, 5)
  g.all_reduce(view, dist::ReduceOp::sum);
  check_values(
      base.reshape({30}),
      [&](int64_t i) {
        double s = 0;
        for (int r = 0; r < ws; ++r) s += value(r, i, DType::f32);
        return s;
      },
      "all_reduce of a transposed view");
  // Several async calls in flight, then waited for in reverse order.
  std::vector<Tensor> ts;
  std::vector<dist::Work> works;
  for (int k = 0; k < 8; ++k) {
    ts.push_back(input(me, 1000 + k, DType::f32, k));
    works.push_back(g.all_reduce(ts.back(), dist::ReduceOp::sum, true));
  }
  for (int k = 7; k >= 0; --k) works[k].wait();
  for (int k = 0; k < 8; ++k)
    check_values(
        ts[k],
        [&](int64_t i) {
          double s = 0;
          for (int r = 0; r < ws; ++r) s += value(r, i + k, DType::f32);
          return s;
        },
        "async all_reduce " + std::to_string(k));
  g.barrier();
}

int collectives() {
  dist::init_process_group();
  const int ws = dist::get_world_size(), me = dist::get_rank();
  std::vector<int> all;
  for (int r = 0; r < ws; ++r) all.push_back(r);
  test_all_reduce(dist::world(), all);
  test_data_movement(dist::world());
  test_layouts_and_async(dist::world());
  // Sub-groups: the even ranks, and the odd ranks listed backwards.
  std::vector<int> even, odd;
  for (int r = 0; r < ws; ++r) (r % 2 ? odd : even).push_back(r);
  std::reverse(odd.begin(), odd.end());
  auto ge = dist::new_group(even);
  auto go = dist::new_group(odd);
  expect((ge != nullptr) == (me % 2 == 0) && (go != nullptr) == (me % 2 == 1), "new_group membership");
  dist::ProcessGroup& mine = me % 2 == 0 ? *ge : *go;
  const std::vector<int>& members = me % 2 == 0 ? even : odd;
  expect(mine.size() == (int)members.size() && members[mine.rank()] == me, "group rank of " + std::to_string(me));
  test_all_reduce(mine, members);
  Tensor t = input(me, 11, DType::f32);
  mine.broadcast(t, 0);  // group rank 0 = members[0]
  check_values(
      t, [&](int64_t i) { return value(members[0], i, DType::f32); }, "sub-group broadcast");
  dist::barrier();
  dist::log0("collectives done, world size " + std::to_string(ws));
  dist::destroy_process_group();
  return g_failures ? 1 : 0;
}

// The last rank leaves after a barrier; the others' next collective must fail
// with a clear error (the peer closed its connections, or the 10 s timeout), not hang.
int peer_exit() {
  // gloo sees the closed sockets at once; nccl over NVLink/shared memory sees nothing and
  // relies on the timeout, kept short here.
  dist::InitOptions o;
  o.timeout = std::chrono::milliseconds(10000);
  dist::init_process_group(o);
  const int ws = dist::get_world_size(), me = dist::get_rank();
  dist::barrier();
  if (me == ws - 1) {
    dist::log("leaving without a word");
    std::fflush(stderr);
    ::_exit(0);
  }
  Tensor t = genesis::ones({1000}, {genesis::DType::f32, device()});
  try {
    // On cuda a collective only enqueues work: the failure shows when it is waited for (barrier).
    for (int k = 0; k < 1000; ++k) {
      dist::all_reduce(t);
      dist::barrier();
    }
    dist::log("FAIL: all_reduce kept working without a peer");
    return 1;
  } catch (const genesis::Error& e) {
    dist::log(std::string("got the expected error: ") + e.what());
    return (e.code() == GN_ERR_ABORTED || e.code() == GN_ERR_TIMEOUT) ? 0 : 1;
  }
}

// The last rank stays alive but never joins the collective: the others fail
// with GN_ERR_TIMEOUT after the 2 s timeout.
int peer_silent() {
  dist::InitOptions o;
  o.timeout = std::chrono::milliseconds(2000);
  dist::init_process_group(o);
  const int ws = dist::get_world_size(), me = dist::get_rank();
  if (me == ws - 1) {
    ::sleep(3);
    ::_exit(0);
  }
  Tensor t = genesis::ones({10}, {genesis::DType::f32, device()});
  try {
    dist::all_reduce(t);
    dist::barrier();
    dist::log("FAIL: all_reduce returned without the silent peer");
    return 1;
  } catch (const genesis::Error& e) {
    dist::log(std::string("got the expected error: ") + e.what());
    return e.code() == GN_ERR_TIMEOUT ? 0 : 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string which = argc > 1 ? argv[1] : "";
  try {
    if (which == "collectives") return collectives();
    if (which == "peer_exit") return peer_exit();
    if (which == "peer_silent") return peer_silent();
    if (which == "killed") {  // the last rank is killed mid-job while the others all-reduce
      dist::init_process_group();
      dist::barrier();
      if (dist::get_rank() == dist::get_world_size() - 1) ::raise(SIGKILL);
      genesis::Tensor t = genesis::ones({1000}, {genesis::DType::f32, device()});
      for (int k = 0; k < 100000; ++k) dist::all_reduce(t), dist::barrier();
      return 0;
    }
    if (which == "exit_code") {  // rank 1 fails with code 3 while the others wait forever
      if (std::getenv("RANK") && std::string(std::getenv("RANK")) == "1") return 3;
      ::sleep(60);
      return 0;
    }
  } catch (const std::exception& e) {
    dist::log(std::string("FAIL: ") + e.what());
    return 1;
  }
  std::fprintf(stderr, "usage: %s collectives|peer_exit|peer_silent|killed|exit_code\n", argv[0]);
  return 2;
}

// tests/frontend/distributed/fsdp_worker.cpp - one rank of the FSDP tests
// (started by fsdp_test through launch()).
//
// The oracle is a plain single-process run inside each rank, in float64 as the
// sharded run: a second copy of the model, initialised as rank 0's, trained
// with optim::AdamW (and clip_grad_norm_) on the concatenation of every rank's
// batch (batch(r, step) depends only on r and step).  Mean losses over equal
// per-rank batches make the average of the ranks' gradients the gradient of
// the concatenated batch.
//
// Modes (argv[1]):
//   main      every strategy, units and activation checkpointing: 5 AdamW steps with clipping,
//             no_sync accumulation, bitwise-equal replicas, the memory held;
//   negative  the same 5 steps with one unit's first reduction skipped ($GENESIS_FSDP_SKIP_REDUCE):
//             succeeds only when the comparison fails;
//   save      (4 ranks) 3 steps, a sharded checkpoint, then one step's losses written beside it;
//   resume    (any world size) loads the checkpoint and must reproduce those losses;
//   dead      the last rank leaves after one step: the others must get a clear error.
// Prints one line per mismatch; exit code 1 if any.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "genesis/autograd.hpp"
#include "genesis/distributed.hpp"
#include "genesis/distributed/fsdp.hpp"
#include "genesis/io.hpp"
#include "genesis/nn/functional.hpp"
#include "genesis/nn/linear.hpp"
#include "genesis/optim/adam.hpp"
#include "genesis/optim/clip_grad.hpp"

namespace dist = genesis::distributed;
namespace nn = genesis::nn;
using dist::ShardingStrategy;
using genesis::Tensor;

namespace {

int g_failures = 0;
const char* g_label = "FAIL";  // "expected mismatch" in the negative controls
double g_worst = 0;            // largest relative error against the float64 oracle

void expect(bool ok, const std::string& what) {
  if (ok) return;
  ++g_failures;
  dist::log(std::string(g_label) + ": " + what);
}

std::string sci(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3e", x);
  return buf;
}

// x (B, 7) -> (B, 3).  fc1 and fc2 can be units (their forwards go through unit_forward); fc3 is in
// the root unit.  The sizes are not multiples of 4: the flat buffers are padded.
struct Net : nn::Module {
  nn::Linear fc1{7, 13}, fc2{13, 13}, fc3{13, 3};
  bool checkpointed = false;    // fc2 inside an activation-checkpointed region
  std::function<void()> probe;  // called between fc1 and fc2
  Net() {
    register_module("fc1", fc1);
    register_module("fc2", fc2);
    register_module("fc3", fc3);
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = dist::unit_forward(fc1, [&] { return fc1(x); }).tanh();
    if (probe) probe();
    auto inner = [this](const std::vector<Tensor>& in) {
      return dist::unit_forward(fc2, [&] { return fc2(in[0]); }).tanh();
    };
    h = checkpointed ? genesis::autograd::checkpoint(inner, {h}) : inner({h});
    return fc3(h);
  }
};

constexpr int64_t kBatch = 5;  // per rank, odd on purpose

std::unique_ptr<Net> make_net(uint64_t seed) {
  genesis::manual_seed(seed);
  auto m = std::make_unique<Net>();
  m->to(genesis::DType::f64);
  return m;
}

// Rank r's batch at step s: inputs (kBatch, 7) and targets (kBatch, 3), float64.
std::pair<Tensor, Tensor> batch(int r, int s) {
  genesis::manual_seed(1000 + 97 * (uint64_t)r + 7919 * (uint64_t)s);
  genesis::Options o{genesis::DType::f64};
  return {genesis::randn({kBatch, 7}, o), genesis::randn({kBatch, 3}, o)};
}

// The batches of ranks 0..ws-1 at step s, concatenated along dim 0.
std::pair<Tensor, Tensor> global_batch(int ws, int s) {
  std::vector<double> xs, ys;
  for (int r = 0; r < ws; ++r) {
    auto [x, y] = batch(r, s);
    for (double v : x.tolist()) xs.push_back(v);
    for (double v : y.tolist()) ys.push_back(v);
  }
  genesis::Options o{genesis::DType::f64};
  return {genesis::tensor(xs, {ws * kBatch, 7}, o), genesis::tensor(ys, {ws * kBatch, 3}, o)};
}

// ||a - b|| / ||b|| over all elements.
double rel(const Tensor& a, const Tensor& b) {
  std::vector<double> x = a.tolist(), y = b.tolist();
  if (x.size() != y.size()) return INFINITY;
  double d = 0, n = 0;
  for (size_t i = 0; i < x.size(); ++i) d += (x[i] - y[i]) * (x[i] - y[i]), n += y[i] * y[i];
  return n > 0 ? std::sqrt(d / n) : std::sqrt(d);
}

bool bitwise_equal(const Tensor& a, const Tensor& b) { return a.shape() == b.shape() && a.tolist() == b.tolist(); }

// The sharded run's parameters (gathered) against the oracle's, and across the ranks.
void compare_params(dist::FullyShardedDataParallel& f, Net& ref, Net& model, double tol, const std::string& what) {
  auto whole = f.full_state_dict();
  for (auto& [name, p] : ref.named_parameters()) {
    const double e = rel(whole.at(name), p);
    g_worst = std::max(g_worst, e);
    expect(e <= tol, what + ": " + name + " vs the single-process run, relative error " + sci(e));
    auto parts = dist::world().all_gather(whole.at(name));
    for (size_t r = 1; r < parts.size(); ++r)
      expect(bitwise_equal(parts[r], parts[0]),
             what + ": " + name + " differs between rank 0 and rank " + std::to_string(r));
  }
  if (f.strategy() != ShardingStrategy::full)  // the replicated parameters are the gathered ones
    for (auto& [name, p] : model.named_parameters())
      expect(bitwise_equal(p, whole.at(name)), what + ": the module's " + name + " is not the gathered value");
}

genesis::optim::AdamWOptions adamw() { return {.lr = 0.02, .weight_decay = 0.1}; }

dist::FSDPOptions options(ShardingStrategy s, Net& m, bool per_layer) {
  dist::FSDPOptions o;
  o.strategy = s;
  if (per_layer) o.units = {&m.fc1, &m.fc2};
  o.lr = adamw().lr;
  o.weight_decay = adamw().weight_decay;
  return o;
}

constexpr double kClip = 0.3;  // below the gradient norm of the first steps: clipping acts

// 5 AdamW steps with clipping; returns the comparison's failures.
int five_steps(ShardingStrategy s, bool per_layer, bool checkpointed, double tol, bool prefetch = true) {
  const int ws = dist::get_world_size(), me = dist::get_rank();
  const std::string what = std::string(dist::to_string(s)) + (per_layer ? ", units fc1 fc2" : ", one unit") +
                           (checkpointed ? ", fc2 checkpointed" : "") + (prefetch ? "" : ", no prefetch");
  const int before = g_failures;
  auto model = make_net(100 + me);  // rank-dependent init: FSDP must broadcast rank 0's
  auto ref = make_net(100);
  model->checkpointed = checkpointed;
  auto o = options(s, *model, per_layer);
  o.prefetch = prefetch;
  dist::FullyShardedDataParallel f(*model, o);
  if (s == ShardingStrategy::full && per_layer && !checkpointed)  // the root unit, and fc2 when prefetched
    model->probe = [&] {
      const int64_t want = 8 * (f.unit_numel(2) + (prefetch ? f.unit_numel(1) : 0));
      expect(f.memory().params == want, what + ": " + std::to_string(f.memory().params) +
                                            " bytes of parameters held between fc1 and fc2, expected " +
                                            std::to_string(want));
    };
  expect(f.num_units() == (per_layer ? 3u : 1u), what + ": " + std::to_string(f.num_units()) + " units");
  genesis::optim::AdamW ref_opt(ref->parameters(), adamw());
  bool clipped = false;
  for (int step = 0; step < 5; ++step) {
    f.zero_grad();
    ref_opt.zero_grad();
    auto [x, y] = batch(me, step);
    Tensor out = f(x);
    if (s == ShardingStrategy::full && per_layer && !checkpointed)  // fc1 and fc2 released after their forward
      expect(f.memory().params == 8 * f.unit_numel(2), what + ": " + std::to_string(f.memory().params) +
                                                           " bytes of parameters held after forward, expected " +
                                                           std::to_string(8 * f.unit_numel(2)) + " (the root unit)");
    Tensor loss = nn::functional::mse_loss(out, y);
    loss.backward();
    if (s == ShardingStrategy::full)  // released after backward: nothing gathered is kept
      expect(f.memory().params == 0,
             what + ": " + std::to_string(f.memory().params) + " bytes of gathered parameters held after backward");
    const double norm = f.clip_grad_norm_(kClip);
    f.step();
    auto [gx, gy] = global_batch(ws, step);
    Tensor ref_loss = nn::functional::mse_loss(ref->forward(gx), gy);
    ref_loss.backward();
    const double ref_norm = genesis::nn::utils::clip_grad_norm_(ref->parameters(), kClip).item<double>();
    ref_opt.step();
    clipped = clipped || ref_norm > kClip;
    const double en = std::abs(norm - ref_norm) / ref_norm;
    g_worst = std::max(g_worst, en);
    expect(en <= tol, what + ", step " + std::to_string(step) + ": gradient norm " + std::to_string(norm) + " vs " +
                          std::to_string(ref_norm));
    Tensor mean_loss = loss.detach().clone();
    dist::world().all_reduce(mean_loss, dist::ReduceOp::avg);
    const double el = rel(mean_loss, ref_loss.detach());
    g_worst = std::max(g_worst, el);
    expect(el <= tol, what + ", step " + std::to_string(step) + ": loss relative error " + sci(el));
  }
  expect(clipped, what + ": the clipping never acted (norms below " + std::to_string(kClip) + ")");
  compare_params(f, *ref, *model, tol, what + ", 5 AdamW steps");
  // The memory held: AdamW's two moments and the master copy for this rank's shard only.
  int64_t shard = 0, padded = 0;
  for (size_t k = 0; k < f.num_units(); ++k) shard += f.unit_numel(k) / ws, padded += f.unit_numel(k);
  const auto mem = f.memory();
  expect(mem.optimizer_state == 2 * 8 * shard && mem.master == 8 * shard,
         what + ": AdamW state " + std::to_string(mem.optimizer_state) + " bytes, master " +
             std::to_string(mem.master) + ", expected " + std::to_string(16 * shard) + " and " +
             std::to_string(8 * shard));
  const int64_t grads = s == ShardingStrategy::optimizer ? 8 * padded : 8 * shard;
  expect(mem.grads == grads,
         what + ": gradients " + std::to_string(mem.grads) + " bytes, expected " + std::to_string(grads));
  const int64_t params = s == ShardingStrategy::full ? 0 : 8 * padded;
  expect(mem.params == params,
         what + ": parameters " + std::to_string(mem.params) + " bytes, expected " + std::to_string(params));
  return g_failures - before;
}

// 3 micro-batches, the first two under no_sync, = one step on the large batch.
void no_sync(ShardingStrategy s, bool per_layer) {
  const int ws = dist::get_world_size(), me = dist::get_rank();
  const std::string what = std::string("no_sync, ") + dist::to_string(s) + (per_layer ? ", units fc1 fc2" : "");
  auto model = make_net(300 + me);
  auto ref = make_net(300);
  dist::FullyShardedDataParallel f(*model, options(s, *model, per_layer));
  genesis::optim::AdamW ref_opt(ref->parameters(), adamw());
  for (int m = 0; m < 3; ++m) {
    auto [x, y] = batch(me, 10 + m);
    Tensor loss = nn::functional::mse_loss(f(x), y) * (1.0 / 3);
    if (m < 2) {
      auto guard = f.no_sync();
      loss.backward();
    } else {
      loss.backward();
    }
  }
  f.step();
  std::vector<double> xs, ys;
  for (int m = 0; m < 3; ++m) {
    auto [gx, gy] = global_batch(ws, 10 + m);
    for (double v : gx.tolist()) xs.push_back(v);
    for (double v : gy.tolist()) ys.push_back(v);
  }
  const int64_t n = 3 * ws * kBatch;
  genesis::Options o{genesis::DType::f64};
  nn::functional::mse_loss(ref->forward(genesis::tensor(xs, {n, 7}, o)), genesis::tensor(ys, {n, 3}, o)).backward();
  ref_opt.step();
  compare_params(f, *ref, *model, 1e-10, what);
}

// Mixed precision: float32 parameters gathered, computed and reduced in bf16, float32 master shards.
void mixed(ShardingStrategy s) {
  const int ws = dist::get_world_size(), me = dist::get_rank();
  const std::string what = std::string("param_dtype=bf16, ") + dist::to_string(s);
  genesis::manual_seed(100 + me);
  auto model = std::make_unique<Net>();  // float32
  auto ref = make_net(100);
  auto o = options(s, *model, true);
  o.param_dtype = genesis::DType::bf16;
  dist::FullyShardedDataParallel f(*model, o);
  genesis::optim::AdamW ref_opt(ref->parameters(), adamw());
  for (int step = 0; step < 5; ++step) {
    f.zero_grad();
    ref_opt.zero_grad();
    auto [x, y] = batch(me, step);
    Tensor out = f(x.to(genesis::DType::bf16));
    expect(out.dtype() == genesis::DType::bf16, what + ": the forward computes in bf16");
    nn::functional::mse_loss(out, y.to(genesis::DType::bf16)).backward();
    f.clip_grad_norm_(kClip);
    f.step();
    auto [gx, gy] = global_batch(ws, step);
    nn::functional::mse_loss(ref->forward(gx), gy).backward();
    genesis::nn::utils::clip_grad_norm_(ref->parameters(), kClip);
    ref_opt.step();
  }
  auto whole = f.full_state_dict();
  double worst = 0;
  for (auto& [name, p] : ref->named_parameters()) {
    expect(whole.at(name).dtype() == genesis::DType::f32, what + ": the gathered " + name + " is float32");
    const double e = rel(whole.at(name), p);
    worst = std::max(worst, e);
    expect(e <= 3e-2, what + ": " + name + " vs the float64 run, relative error " + sci(e));
    auto parts = dist::world().all_gather(whole.at(name));
    for (size_t r = 1; r < parts.size(); ++r)
      expect(bitwise_equal(parts[r], parts[0]), what + ": " + name + " differs between ranks");
  }
  // bf16 keeps 8 significant bits: an error this small means nothing was rounded.
  expect(worst > 1e-5, what + ": the largest error " + sci(worst) + " shows no bf16 rounding");
  if (s != ShardingStrategy::full)
    expect(model->fc1.weight.dtype() == genesis::DType::bf16, what + ": the replicated parameters are bf16");
  int64_t shard = 0, padded = 0;
  for (size_t k = 0; k < f.num_units(); ++k) shard += f.unit_numel(k) / ws, padded += f.unit_numel(k);
  const auto mem = f.memory();
  expect(mem.master == 4 * shard && mem.optimizer_state == 8 * shard, what + ": float32 master shards and AdamW state");
  expect(mem.params == (s == ShardingStrategy::full ? 0 : 2 * padded),
         what + ": bf16 parameters " + std::to_string(mem.params) + " bytes");
  expect(mem.grads == (s == ShardingStrategy::optimizer ? 2 * padded : 2 * shard),
         what + ": bf16 gradients " + std::to_string(mem.grads) + " bytes");
  dist::log0(what + ": largest relative error vs the float64 run " + sci(worst));
}

int main_mode() {
  dist::init_process_group();
  for (ShardingStrategy s : {ShardingStrategy::optimizer, ShardingStrategy::grad_optimizer, ShardingStrategy::full})
    for (bool per_layer : {false, true}) {
      five_steps(s, per_layer, false, 1e-10);
      no_sync(s, per_layer);
    }
  five_steps(ShardingStrategy::full, true, true, 1e-10);
  five_steps(ShardingStrategy::grad_optimizer, true, true, 1e-10);
  five_steps(ShardingStrategy::full, true, false, 1e-10, /*prefetch=*/false);
  for (ShardingStrategy s : {ShardingStrategy::optimizer, ShardingStrategy::grad_optimizer, ShardingStrategy::full})
    mixed(s);
  // Bad units are refused with a clear error.
  {
    auto model = make_net(1), other = make_net(2);
    dist::FSDPOptions o;
    o.units = {&other->fc1};
    try {
      dist::FullyShardedDataParallel f(*model, o);
      expect(false, "a unit outside the module was accepted");
    } catch (const genesis::Error& e) {
      expect(std::string(e.what()).find("not a submodule") != std::string::npos, e.what());
    }
    o.units = {model.get(), &model->fc1};
    try {
      dist::FullyShardedDataParallel f(*model, o);
      expect(false, "overlapping units were accepted");
    } catch (const genesis::Error& e) {
      expect(std::string(e.what()).find("overlap") != std::string::npos, e.what());
    }
  }
  dist::log0("fsdp done, world size " + std::to_string(dist::get_world_size()) +
             ", largest relative error vs the float64 oracle " + sci(g_worst));
  dist::destroy_process_group();
  return g_failures ? 1 : 0;
}

int negative_mode(const std::string& strategy) {
  dist::init_process_group();
  ::setenv("GENESIS_FSDP_SKIP_REDUCE", "0", 1);
  g_label = "expected mismatch";
  const int caught = five_steps(dist::sharding_strategy_from_string(strategy), true, false, 1e-10);
  dist::destroy_process_group();
  if (caught == 0) {
    dist::log("FAIL: negative control: a skipped reduction went unnoticed");
    return 1;
  }
  dist::log0("negative control: the comparison caught the skipped reduction (" + std::to_string(caught) +
             " mismatches)");
  return 0;
}

// ---- checkpoints: saved by 4 ranks, resumed by any number

std::string ckpt_dir() { return std::string(std::getenv("GENESIS_FSDP_TEST_DIR")) + "/ckpt"; }

// The losses on a fixed batch before and after one step on the 4-rank data of step 3, split over the ranks.
std::pair<double, double> next_step_losses(dist::FullyShardedDataParallel& f) {
  const int ws = dist::get_world_size(), me = dist::get_rank();
  auto [ex, ey] = global_batch(4, 77);
  auto eval = [&] {
    genesis::autograd::NoGradGuard ng;
    return nn::functional::mse_loss(f(ex), ey).item<double>();
  };
  const double before = eval();
  auto [gx, gy] = global_batch(4, 3);
  const int64_t per = 4 * kBatch / ws;
  f.zero_grad();
  nn::functional::mse_loss(f(gx.slice(0, me * per, (me + 1) * per)), gy.slice(0, me * per, (me + 1) * per)).backward();
  f.clip_grad_norm_(kClip);
  f.step();
  return {before, eval()};
}

int save_mode() {
  dist::init_process_group();
  const int me = dist::get_rank();
  auto model = make_net(500 + me);
  dist::FullyShardedDataParallel f(*model, options(ShardingStrategy::full, *model, true));
  for (int step = 0; step < 3; ++step) {
    f.zero_grad();
    auto [x, y] = batch(me, step);
    nn::functional::mse_loss(f(x), y).backward();
    f.clip_grad_norm_(kClip);
    f.step();
  }
  f.save_sharded(ckpt_dir());
  auto whole = f.full_state_dict();
  auto [l0, l1] = next_step_losses(f);
  if (me == 0) {
    genesis::save(whole, ckpt_dir() + "/../whole.safetensors");
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g %.17g", l0, l1);
    std::ofstream(ckpt_dir() + "/../losses.txt") << buf << "\n";
  }
  dist::barrier();
  dist::log0("saved at world size " + std::to_string(dist::get_world_size()) + ", next-step losses " + sci(l0) + " " +
             sci(l1));
  dist::destroy_process_group();
  return g_failures ? 1 : 0;
}

int resume_mode() {
  dist::init_process_group();
  const int ws = dist::get_world_size(), me = dist::get_rank();
  auto model = make_net(900 + me);  // a different init: everything must come from the checkpoint
  const ShardingStrategy s = ws == 1 ? ShardingStrategy::optimizer : ShardingStrategy::full;
  dist::FullyShardedDataParallel f(*model, options(s, *model, true));
  f.load_sharded(ckpt_dir());
  expect(f.steps() == 3, "resumed at step " + std::to_string(f.steps()));
  auto saved = genesis::load(ckpt_dir() + "/../whole.safetensors");
  for (auto& [name, t] : f.full_state_dict())
    expect(bitwise_equal(t, saved.at(name)),
           "resumed at world size " + std::to_string(ws) + ": " + name + " is not bitwise the saved parameter");
  double want0 = 0, want1 = 0;
  std::ifstream(ckpt_dir() + "/../losses.txt") >> want0 >> want1;
  auto [l0, l1] = next_step_losses(f);
  const double e0 = std::abs(l0 - want0) / want0;
  expect(e0 <= 1e-13,
         "resumed at world size " + std::to_string(ws) + ": loss relative error " + sci(e0) + " before the step");
  const double e = std::abs(l1 - want1) / want1;
  expect(e <= 1e-12, "resumed at world size " + std::to_string(ws) + ": next-step loss relative error " + sci(e));
  dist::log0("resumed at world size " + std::to_string(ws) + ": next-step loss relative error " + sci(e));
  dist::destroy_process_group();
  return g_failures ? 1 : 0;
}

// The last rank leaves after one step; the others' next collective fails with a clear error.
int dead_mode() {
  dist::InitOptions io;
  io.timeout = std::chrono::milliseconds(10000);
  dist::init_process_group(io);
  const int ws = dist::get_world_size(), me = dist::get_rank();
  auto model = make_net(700);
  dist::FullyShardedDataParallel f(*model, options(ShardingStrategy::full, *model, true));
  try {
    for (int step = 0; step < 1000; ++step) {
      if (step == 1 && me == ws - 1) {
        dist::log("leaving without a word");
        std::fflush(stderr);
        ::_exit(0);
      }
      f.zero_grad();
      auto [x, y] = batch(me, step);
      nn::functional::mse_loss(f(x), y).backward();
      f.step();
    }
    dist::log("FAIL: training went on without a peer");
    return 1;
  } catch (const genesis::Error& e) {
    dist::log(std::string("got the expected error: ") + e.what());
    ::_exit(e.code() == GN_ERR_ABORTED || e.code() == GN_ERR_TIMEOUT ? 0 : 1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "main";
  try {
    if (mode == "main") return main_mode();
    if (mode == "negative") return negative_mode(argc > 2 ? argv[2] : "full");
    if (mode == "save") return save_mode();
    if (mode == "resume") return resume_mode();
    if (mode == "dead") return dead_mode();
  } catch (const std::exception& e) {
    dist::log(std::string("FAIL: ") + e.what());
    return 1;
  }
  std::fprintf(stderr, "usage: %s main|negative STRATEGY|save|resume|dead\n", argv[0]);
  return 2;
}

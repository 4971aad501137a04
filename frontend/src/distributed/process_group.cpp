// frontend/src/distributed/process_group.cpp - process groups over gn_comm,
// Work handles, the default (world) group from torchrun's environment, and
// rank-aware logging.
//
// Ordering: a group's calls run in call order on its worker thread, so
// async_op=true returns at once and the caller keeps computing (DDP overlaps
// backward this way); a synchronous call queues behind the pending ones and
// waits.  On cpu (gloo) the worker does the transfer itself.  On cuda (nccl)
// the worker enqueues it on the group's side stream, after an event recorded
// on the caller's stream at the call; Work::wait makes the caller's stream
// wait for it.  Either way the caller's thread never blocks in the
// communicator, and results are copied back (non-contiguous tensors) in wait.
#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <future>
#include <iostream>
#include <thread>

#include "genesis/distributed.hpp"

namespace genesis::distributed {

using Ms = std::chrono::milliseconds;

namespace {

void check_comm(gn_status* st, const std::string& what) {
  if (!st) return;
  const int32_t code = gn_status_code(st);
  std::string msg = "[distributed] " + what + " on rank " + std::to_string(get_rank()) + ": " + gn_status_message(st);
  gn_status_free(st);
  throw Error(code, msg);
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (*end)
    throw Error(GN_ERR_INVALID_ARGUMENT, std::string("[distributed] $") + name + "='" + v + "' is not an integer");
  return (int)x;
}

}  // namespace

// ---- Work

namespace {
// What the worker runs: shared by the task and the Work, never pointing back at the Work
// (the task lives in the future's shared state, which the Work holds: no cycle).
struct Job {
  std::function<void(gn_stream*)> call;
  gn_event* done = nullptr;  // cuda: recorded after the call on the side stream
  ~Job() { gn_status_free(gn_event_destroy(done)); }
};
}  // namespace

struct Work::State {
  std::shared_future<void> done;  // the worker ran the call
  std::shared_ptr<Job> job;
  Device device;
  std::function<void()> finish;  // after the wait: copy results back
};

void Work::wait() {
  if (!s_) return;
  if (s_->done.valid()) s_->done.get();
  if (s_->job && s_->job->done)
    check(gn_stream_wait_event(gn_stream_get_current(runtime(), s_->device.c()), s_->job->done), "Work.wait");
  if (s_->finish) {
    auto f = std::move(s_->finish);
    s_->finish = nullptr;
    f();
  }
}

bool Work::is_completed() const {
  if (!s_) return true;
  if (s_->done.valid()) return s_->done.wait_for(Ms(0)) == std::future_status::ready;
  int32_t done = 1;
  if (s_->job && s_->job->done) check(gn_event_query(s_->job->done, &done), "Work.is_completed");
  return done != 0;
}

// ---- the cpu worker: one thread running the group's calls in order

struct ProcessGroup::Worker {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::packaged_task<void()>> tasks;
  bool stop = false;
  std::thread thread;

  Worker() {
    thread = std::thread([this] {
      while (true) {
        std::packaged_task<void()> t;
        {
          std::unique_lock<std::mutex> g(mu);
          cv.wait(g, [this] { return stop || !tasks.empty(); });
          if (tasks.empty()) return;
          t = std::move(tasks.front());
          tasks.pop_front();
        }
        t();  // a throw lands in the task's future
      }
    });
  }
  std::shared_future<void> push(std::function<void()> f) {
    std::packaged_task<void()> t(std::move(f));
    std::shared_future<void> fut = t.get_future().share();
    {
      std::lock_guard<std::mutex> g(mu);
      tasks.push_back(std::move(t));
    }
    cv.notify_one();
    return fut;
  }
  ~Worker() {
    {
      std::lock_guard<std::mutex> g(mu);
      stop = true;
    }
    cv.notify_one();
    thread.join();
  }
};

// ---- ProcessGroup

ProcessGroup::~ProcessGroup() {
  worker_.reset();  // finishes the queued calls first
  if (side_stream_) gn_status_free(gn_stream_destroy(side_stream_));
  gn_comm_destroy(comm_);
}

std::string ProcessGroup::backend() const { return gn_comm_backend(comm_); }

Work ProcessGroup::run(const char* what, bool async_op, std::function<void(gn_stream*)> fn,
                       std::function<void()> finish) {
  auto st = std::make_shared<Work::State>();
  st->device = device_;
  st->finish = std::move(finish);
  auto job = std::make_shared<Job>();
  job->call = std::move(fn);
  st->job = job;
  if (device_.type() == "cpu") {
    st->done = worker_->push([job] { job->call(nullptr); });
  } else {
    gn_runtime* rt = runtime();
    if (!side_stream_) check(gn_stream_create(rt, device_.c(), &side_stream_), "ProcessGroup");
    gn_event* ready = nullptr;
    check(gn_event_create(rt, device_.c(), &ready), what);
    gn_status* e = gn_event_record(ready, gn_stream_get_current(rt, device_.c()));
    if (!e) e = gn_event_create(rt, device_.c(), &job->done);
    if (e) gn_status_free(gn_event_destroy(ready));
    check(e, what);
    gn_stream* side = side_stream_;
    st->done = worker_->push([job, ready, side] {
      gn_status* w = gn_stream_wait_event(side, ready);
      gn_status_free(gn_event_destroy(ready));
      check(w, "ProcessGroup");
      job->call(side);
      check(gn_event_record(job->done, side), "ProcessGroup");
    });
  }
  Work w(st);
  if (!async_op) w.wait();
  return w;
}

namespace {

// A contiguous tensor holding t's data (t itself when already contiguous).
Tensor dense(const Tensor& t) { return t.is_contiguous() ? t : t.contiguous(); }

// What Work::wait does after the transfer: copy a contiguous stand-in back into the caller's tensor.
std::function<void()> copy_into(Tensor dst, Tensor buf, bool needed) {
  if (!needed) return nullptr;
  return [dst, buf]() mutable { dst.copy_(buf); };
}

void check_device(const ProcessGroup& g, const Tensor& t, const char* what) {
  if (!(t.device() == g.device()))
    throw Error(GN_ERR_DEVICE, std::string("[distributed] ") + what + ": tensor on " + t.device().str() + ", the " +
                                   g.backend() + " group moves " + g.device().str() + " tensors");
}

}  // namespace

Work ProcessGroup::all_reduce(Tensor& t, ReduceOp op, bool async_op) {
  check_device(*this, t, "all_reduce");
  Tensor buf = dense(t), dst = t;
  const bool copy_back = !buf.is_same(t);
  gn_comm* c = comm_;
  return run(
      "all_reduce", async_op,
      [c, buf, op](gn_stream* s) {
        check_comm(gn_comm_all_reduce(c, buf.handle(), buf.handle(), (int32_t)op, s), "all_reduce");
      },
      copy_into(dst, buf, copy_back));
}

Work ProcessGroup::all_reduce_into(Tensor& out, const Tensor& in, ReduceOp op, bool async_op) {
  check_device(*this, in, "all_reduce_into");
  check_device(*this, out, "all_reduce_into");
  if (out.shape() != in.shape() || !(out.dtype() == in.dtype()) || !out.is_contiguous())
    throw Error(GN_ERR_INVALID_ARGUMENT,
                "[distributed] all_reduce_into: out must be contiguous with in's shape and dtype");
  Tensor src = dense(in), dst = out;
  gn_comm* c = comm_;
  return run("all_reduce", async_op, [c, src, dst, op](gn_stream* s) {
    check_comm(gn_comm_all_reduce(c, src.handle(), dst.handle(), (int32_t)op, s), "all_reduce");
  });
}

Work ProcessGroup::broadcast(Tensor& t, int src, bool async_op) {
  check_device(*this, t, "broadcast");
  Tensor buf = dense(t), dst = t;
  const bool copy_back = !buf.is_same(t);
  gn_comm* c = comm_;
  return run(
      "broadcast", async_op,
      [c, buf, src](gn_stream* s) { check_comm(gn_comm_broadcast(c, buf.handle(), src, s), "broadcast"); },
      copy_into(dst, buf, copy_back));
}

Work ProcessGroup::all_gather_into_tensor(Tensor& out, const Tensor& in, bool async_op) {
  check_device(*this, out, "all_gather");
  check_device(*this, in, "all_gather");
  Tensor src = dense(in), buf = dense(out), dst = out;
  const bool copy_back = !buf.is_same(out);
  gn_comm* c = comm_;
  return run(
      "all_gather", async_op,
      [c, src, buf](gn_stream* s) { check_comm(gn_comm_all_gather(c, src.handle(), buf.handle(), s), "all_gather"); },
      copy_into(dst, buf, copy_back));
}

std::vector<Tensor> ProcessGroup::all_gather(const Tensor& in) {
  Shape shape = in.shape();
  shape.insert(shape.begin(), size_);
  Tensor out = empty(shape, Options{in.dtype(), in.device()});
  all_gather_into_tensor(out, in);
  std::vector<Tensor> parts;
  for (int r = 0; r < size_; ++r) parts.push_back(out.select(0, r));
  return parts;
}

Work ProcessGroup::reduce_scatter_tensor(Tensor& out, const Tensor& in, ReduceOp op, bool async_op) {
  check_device(*this, out, "reduce_scatter");
  check_device(*this, in, "reduce_scatter");
  Tensor src = dense(in), buf = dense(out), dst = out;
  const bool copy_back = !buf.is_same(out);
  gn_comm* c = comm_;
  return run(
      "reduce_scatter", async_op,
      [c, src, buf, op](gn_stream* s) {
        check_comm(gn_comm_reduce_scatter(c, src.handle(), buf.handle(), (int32_t)op, s), "reduce_scatter");
      },
      copy_into(dst, buf, copy_back));
}

Work ProcessGroup::all_to_all_single(Tensor& out, const Tensor& in, bool async_op) {
  check_device(*this, out, "all_to_all");
  check_device(*this, in, "all_to_all");
  Tensor src = dense(in), buf = dense(out), dst = out;
  const bool copy_back = !buf.is_same(out);
  gn_comm* c = comm_;
  return run(
      "all_to_all", async_op,
      [c, src, buf](gn_stream* s) { check_comm(gn_comm_all_to_all(c, src.handle(), buf.handle(), s), "all_to_all"); },
      copy_into(dst, buf, copy_back));
}

void ProcessGroup::send(const Tensor& t, int dst, int tag) {
  check_device(*this, t, "send");
  Tensor buf = dense(t);
  gn_comm* c = comm_;
  run("send", false,
      [c, buf, dst, tag](gn_stream* s) { check_comm(gn_comm_send(c, buf.handle(), dst, tag, s), "send"); });
}

void ProcessGroup::recv(Tensor& t, int src, int tag) {
  check_device(*this, t, "recv");
  Tensor buf = dense(t), dst = t;
  const bool copy_back = !buf.is_same(t);
  gn_comm* c = comm_;
  run(
      "recv", false,
      [c, buf, src, tag](gn_stream* s) { check_comm(gn_comm_recv(c, buf.handle(), src, tag, s), "recv"); },
      copy_into(dst, buf, copy_back));
}

void ProcessGroup::barrier() {
  gn_comm* c = comm_;
  const int64_t timeout = timeout_.count();
  // A barrier waits for the transfer itself, not only for its enqueueing (cuda).
  run("barrier", false, [c, timeout](gn_stream* s) {
    check_comm(gn_comm_barrier(c, s), "barrier");
    check_comm(gn_comm_synchronize(c, s, timeout), "barrier");
  });
}

void ProcessGroup::abort() { check_comm(gn_comm_abort(comm_), "abort"); }

// Create the communicator of `ranks` (global ranks) for this process (global
// rank `me`, a member).  Group rank 0 publishes the backend's bootstrap id (or
// an empty one) under prefix + "id"; every member then joins over the store.
std::shared_ptr<ProcessGroup> make_group(const std::string& backend, const Device& device, int me,
                                         const std::vector<int>& ranks, TCPStore& store, const std::string& prefix,
                                         Ms timeout) {
  std::shared_ptr<ProcessGroup> g(new ProcessGroup());
  g->ranks_ = ranks;
  g->size_ = (int)ranks.size();
  g->rank_ = (int)(std::find(ranks.begin(), ranks.end(), me) - ranks.begin());
  g->device_ = device;
  g->timeout_ = timeout;
  gn_runtime* rt = runtime();
  gn_comm_id id{};
  std::string id_bytes;
  if (g->rank_ == 0) {
    gn_status* st = gn_comm_unique_id(rt, backend.c_str(), &id);
    if (st && gn_status_code(st) != GN_ERR_UNSUPPORTED) check_comm(st, "unique_id");
    if (!st) id_bytes.assign(id.bytes, sizeof id.bytes);
    gn_status_free(st);
    store.set(prefix + "id", id_bytes);
  } else {
    id_bytes = store.get(prefix + "id");
    if (id_bytes.size() == sizeof id.bytes) std::memcpy(id.bytes, id_bytes.data(), sizeof id.bytes);
  }
  gn_comm_config cfg{};
  cfg.struct_size = sizeof cfg;
  cfg.rank = g->rank_;
  cfg.world_size = g->size_;
  cfg.device_index = device.index();
  cfg.timeout_ms = timeout.count();
  cfg.id = id_bytes.empty() ? nullptr : &id;
  cfg.store = store.c_store();
  cfg.prefix = prefix.c_str();
  cfg.local_address = store.local_address().empty() ? nullptr : store.local_address().c_str();
  check_comm(gn_comm_create(rt, backend.c_str(), &cfg, &g->comm_), "init (" + backend + ", " + prefix + ")");
  g->worker_ = std::make_unique<ProcessGroup::Worker>();
  return g;
}

// ---- the default group

namespace {

struct Global {
  std::unique_ptr<TCPStore> store;
  std::shared_ptr<ProcessGroup> world;
  std::string backend;
  Device device;
  int rank = 0, world_size = 1;
  int groups = 0;  // sub-groups made so far (names their store prefixes)
  Ms timeout{0};
};

// Never destroyed: a job left open at exit (a trainer that never calls
// destroy_process_group) must not tear NCCL down after the CUDA runtime is gone.
Global& global() {
  static Global* g = new Global;
  return *g;
}

Global& need_init(const char* what) {
  Global& g = global();
  if (!g.world)
    throw Error(GN_ERR_INVALID_ARGUMENT, std::string("[distributed] ") + what +
                                             ": the default process group is not initialized; call init_process_group");
  return g;
}

}  // namespace

void init_process_group(const InitOptions& o) {
  Global& g = global();
  if (g.world) throw Error(GN_ERR_INVALID_ARGUMENT, "[distributed] init_process_group: already initialized");
  const int ws_env = env_int("WORLD_SIZE", -1);
  const int world_size = o.world_size >= 0 ? o.world_size : ws_env >= 0 ? ws_env : 1;
  const int rank = o.rank >= 0 ? o.rank : env_int("RANK", 0);
  if (world_size < 1 || rank < 0 || rank >= world_size)
    throw Error(GN_ERR_INVALID_ARGUMENT, "[distributed] init_process_group: rank " + std::to_string(rank) +
                                             " of world size " + std::to_string(world_size));
  std::string addr = o.master_addr;
  if (addr.empty()) addr = std::getenv("MASTER_ADDR") ? std::getenv("MASTER_ADDR") : "127.0.0.1";
  // A job of one started without the environment serves an ephemeral port.
  int port = o.master_port >= 0 ? o.master_port : env_int("MASTER_PORT", ws_env < 0 ? 0 : 29500);
  Ms timeout = o.timeout.count() >= 0 ? o.timeout : Ms(int64_t(env_int("GENESIS_DIST_TIMEOUT", 300)) * 1000);
  std::string dev = o.device;
  if (dev.empty()) dev = std::getenv("GENESIS_DIST_DEVICE") ? std::getenv("GENESIS_DIST_DEVICE") : "cpu";
  Device device = dev == "cuda" ? Device("cuda:" + std::to_string(local_rank())) : Device(dev);
  std::string backend = o.backend;
  if (backend.empty()) {
    const char* b = gn_comm_backend_for(runtime(), device.type().c_str());
    if (!b)
      throw Error(GN_ERR_NOT_FOUND, "[distributed] init_process_group: no communicator plugin serves " + device.type() +
                                        " tensors (is libgenesis_plugin_" +
                                        (device.type() == "cuda" ? "nccl" : "gloo") +
                                        ".so built and on the plugin path?)");
    backend = b;
  }
  g.rank = rank;
  g.world_size = world_size;
  g.store = std::make_unique<TCPStore>(addr, port, rank == 0, timeout);
  std::vector<int> all(world_size);
  for (int r = 0; r < world_size; ++r) all[r] = r;
  try {
    g.world = make_group(backend, device, rank, all, *g.store, "world/", timeout);
  } catch (...) {
    g.store.reset();
    throw;
  }
  g.backend = backend;
  g.device = device;
  g.groups = 0;
  g.timeout = timeout;
}

bool is_initialized() { return global().world != nullptr; }

bool init_from_env(const Device& device) {
  if (is_initialized()) return get_world_size() > 1;
  if (env_int("WORLD_SIZE", 1) <= 1) return false;
  InitOptions o;
  o.device = device.type();
  init_process_group(o);
  if (!(world().device() == device))
    throw Error(GN_ERR_DEVICE, "[distributed] rank " + std::to_string(get_rank()) + " trains on " + device.str() +
                                   " but its group moves " + world().device().str() +
                                   " (use cuda:$LOCAL_RANK, see distributed::local_device)");
  return true;
}

Device local_device(const std::string& spec) {
  if (spec == "cuda" && std::getenv("LOCAL_RANK")) return Device("cuda:" + std::to_string(local_rank()));
  return Device(spec);
}

void destroy_process_group() {
  Global& g = global();
  if (!g.world) return;
  // Rank 0 serves the store: it leaves last, so no rank loses the store while
  // still using it (the others say goodbye, rank 0 waits for all of them).
  try {
    g.store->add("goodbye", 1);
    if (g.rank == 0) {
      const auto deadline = std::chrono::steady_clock::now() + Ms(5000);
      while (g.store->add("goodbye", 0) < g.world_size && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(Ms(5));
    }
  } catch (const Error&) {
    // The store is gone (rank 0 died): nothing to wait for.
  }
  g.world.reset();
  g.store.reset();
  g.rank = 0;
  g.world_size = 1;
}

ProcessGroup& world() { return *need_init("world").world; }
TCPStore& store() { return *need_init("store").store; }
int get_rank() { return global().rank; }
int get_world_size() { return global().world_size; }
int local_rank() { return env_int("LOCAL_RANK", 0); }
int local_world_size() { return env_int("LOCAL_WORLD_SIZE", 1); }

std::shared_ptr<ProcessGroup> new_group(const std::vector<int>& ranks) {
  Global& g = need_init("new_group");
  const std::string prefix = "group" + std::to_string(++g.groups) + "/";
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= g.world_size)
      throw Error(GN_ERR_INDEX, "[distributed] new_group: rank " + std::to_string(ranks[i]) +
                                    " is not in the world of " + std::to_string(g.world_size));
    for (size_t j = 0; j < i; ++j)
      if (ranks[j] == ranks[i])
        throw Error(GN_ERR_INVALID_ARGUMENT,
                    "[distributed] new_group: rank " + std::to_string(ranks[i]) + " listed twice");
  }
  if (std::find(ranks.begin(), ranks.end(), g.rank) == ranks.end()) return nullptr;
  return make_group(g.backend, g.device, g.rank, ranks, *g.store, prefix, g.timeout);
}

Work all_reduce(Tensor& t, ReduceOp op, ProcessGroup* g, bool async_op) {
  return (g ? *g : world()).all_reduce(t, op, async_op);
}

Work broadcast(Tensor& t, int src, ProcessGroup* g, bool async_op) {
  return (g ? *g : world()).broadcast(t, src, async_op);
}

std::vector<Tensor> all_gather(const Tensor& t, ProcessGroup* g) { return (g ? *g : world()).all_gather(t); }

void barrier(ProcessGroup* g) { (g ? *g : world()).barrier(); }

// ---- logging

void log(const std::string& msg) {
  const std::string line =
      "[rank " + std::to_string(get_rank()) + "/" + std::to_string(get_world_size()) + "] " + msg + "\n";
  // One write: lines of different processes never interleave mid-line.
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

void log0(const std::string& msg) {
  if (get_rank() == 0) log(msg);
}

}  // namespace genesis::distributed

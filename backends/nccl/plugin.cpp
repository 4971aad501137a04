// backends/nccl/plugin.cpp - the NCCL communicator for "cuda" tensors
// -> libgenesis_plugin_nccl.so.  Collectives are enqueued on the caller's
// stream (the cudaStream_t the core passes) and return at once.
//
// Never hang forever: communicators are non-blocking (ncclConfig_t.blocking =
// 0).  Every call waits for NCCL to accept the work while polling
// ncclCommGetAsyncError; synchronize() waits for the work itself (an event on
// the stream) the same way.  A watchdog thread per communicator (as PyTorch's)
// does the same for work nobody waits on through the communicator: it polls
// ncclCommGetAsyncError and an event recorded after each call, so a host thread
// blocked elsewhere (a cudaStreamSynchronize behind a collective) is released.
// A peer that died or stopped answering makes NCCL report an error, or a wait
// passes its timeout: then the communicator is aborted (ncclCommAbort, which
// also releases the kernels stuck on the GPU) and the call fails with
// GN_ERR_ABORTED or GN_ERR_TIMEOUT.  The first failure sticks.
//
// dtypes: every Genesis dtype; bool reduces as uint8 with max (SUM, MAX = or)
// and min (PROD, MIN = and).  AVG (ncclAvg) is for floating dtypes only, as in
// the gloo plugin.  send/recv ignore the tag: NCCL matches them in call order.
#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "genesis/sdk/comm.h"
#include "genesis/sdk/plugin.h"

#if NCCL_VERSION_CODE < 21400
#error "the nccl plugin needs NCCL >= 2.14 (non-blocking communicators, ncclCommFinalize)"
#endif

namespace gn::nccl {
namespace {

using gn::sdk::fail;
using Clock = std::chrono::steady_clock;

const gn_host_api* host() { return gn::sdk::host_ref(); }

constexpr int64_t kDefaultTimeoutMs = 30 * 60 * 1000;

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) fail(GN_ERR_DEVICE, std::string("[nccl] ") + what + ": " + cudaGetErrorString(e));
}

struct Comm {
  ncclComm_t comm = nullptr;
  int device = 0;
  int rank = 0, size = 1;
  int64_t timeout_ms = kDefaultTimeoutMs;
  void* scratch = nullptr;  // 4 bytes of device memory for barrier
  std::mutex err_mu;
  int32_t err_code = GN_OK;
  std::string err_msg;
  bool aborted = false;
  // Watchdog: events recorded after each call, oldest first, with the time of the call.
  std::mutex watch_mu;
  std::deque<std::pair<cudaEvent_t, Clock::time_point>> pending;
  std::atomic<bool> stop{false};
  std::thread watchdog;

  void set_error(int32_t code, const std::string& msg) {
    std::lock_guard<std::mutex> g(err_mu);
    if (err_code == GN_OK) err_code = code, err_msg = msg;
  }
  void check_healthy(const char* what) {
    std::lock_guard<std::mutex> g(err_mu);
    if (err_code != GN_OK)
      fail(err_code, std::string("[nccl] ") + what + ": the communicator failed earlier: " + err_msg);
  }
  // Abort once (frees the GPU from kernels waiting on a dead peer).
  void abort_comm() {
    std::lock_guard<std::mutex> g(err_mu);
    if (aborted || !comm) return;
    aborted = true;
    ncclCommAbort(comm);
  }
  // Fail: remember, abort, throw.
  [[noreturn]] void die(int32_t code, const std::string& msg) {
    set_error(code, msg);
    abort_comm();
    fail(code, msg);
  }
  // Wait until NCCL leaves ncclInProgress for this communicator (or until done()
  // holds), polling its asynchronous error; abort on an error or a timeout.
  template <class Done>
  void poll(const char* what, Done done, int64_t timeout_ms_override = 0) {
    const int64_t limit = timeout_ms_override > 0 ? timeout_ms_override : timeout_ms;
    const auto deadline = Clock::now() + std::chrono::milliseconds(limit);
    int spins = 0;
    while (true) {
      ncclResult_t async = ncclSuccess;
      ncclResult_t r = ncclCommGetAsyncError(comm, &async);
      if (r != ncclSuccess) async = r;
      if (async != ncclSuccess && async != ncclInProgress)
        die(GN_ERR_ABORTED, std::string("[nccl] ") + what + " on rank " + std::to_string(rank) + ": " +
                                ncclGetErrorString(async) + " (" + ncclGetLastError(comm) +
                                "); a peer probably died: the communicator was aborted");
      if (async == ncclSuccess && done()) return;
      if (Clock::now() > deadline)
        die(GN_ERR_TIMEOUT, std::string("[nccl] ") + what + " on rank " + std::to_string(rank) +
                                ": a peer did not answer within " + std::to_string(limit) +
                                " ms; the communicator was aborted");
      // Enqueueing takes microseconds: yield first, sleep only when it drags on.
      if (++spins < 20000)
        std::this_thread::yield();
      else
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  // The watchdog's loop: every 10 ms, NCCL's asynchronous error and the oldest call's event.
  void watch() {
    cudaSetDevice(device);
    while (!stop.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      {
        std::lock_guard<std::mutex> g(err_mu);
        if (aborted) continue;
      }
      ncclResult_t async = ncclSuccess;
      if (ncclCommGetAsyncError(comm, &async) == ncclSuccess && async != ncclSuccess && async != ncclInProgress) {
        set_error(GN_ERR_ABORTED, std::string("[nccl] rank ") + std::to_string(rank) + ": " +
                                      ncclGetErrorString(async) +
                                      "; a peer probably died: the communicator was aborted");
        abort_comm();
        continue;
      }
      std::lock_guard<std::mutex> g(watch_mu);
      while (!pending.empty()) {
        cudaError_t q = cudaEventQuery(pending.front().first);
        if (q == cudaErrorNotReady) {
          if (Clock::now() - pending.front().second > std::chrono::milliseconds(timeout_ms)) {
            set_error(GN_ERR_TIMEOUT, std::string("[nccl] rank ") + std::to_string(rank) +
                                          ": a collective did not finish within " + std::to_string(timeout_ms) +
                                          " ms (a peer stopped answering); the communicator was aborted");
            abort_comm();
          }
          break;
        }
        cudaEventDestroy(pending.front().first);
        pending.pop_front();
      }
    }
    std::lock_guard<std::mutex> g(watch_mu);
    for (auto& [e, t] : pending) cudaEventDestroy(e);
    pending.clear();
  }
  // Hand the work just enqueued on stream to the watchdog.
  void track(cudaStream_t stream) {
    cudaEvent_t e;
    if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess) return;
    if (cudaEventRecord(e, stream) != cudaSuccess) {
      cudaEventDestroy(e);
      return;
    }
    std::lock_guard<std::mutex> g(watch_mu);
    pending.emplace_back(e, Clock::now());
  }
  // Issue one NCCL call (f returns its ncclResult_t) and wait until it is enqueued.
  template <class F>
  void issue(const char* what, cudaStream_t stream, F f) {
    check_healthy(what);
    cuda_check(cudaSetDevice(device), what);
    ncclResult_t r = f();
    if (r != ncclSuccess && r != ncclInProgress)
      die(r == ncclInvalidArgument || r == ncclInvalidUsage ? GN_ERR_INVALID_ARGUMENT : GN_ERR_ABORTED,
          std::string("[nccl] ") + what + " on rank " + std::to_string(rank) + ": " + ncclGetErrorString(r) + " (" +
              ncclGetLastError(comm) + ")");
    poll(what, [] { return true; });
    track(stream);
  }
};

Comm& comm_of(void* c) {
  if (!c) fail(GN_ERR_INVALID_ARGUMENT, "[nccl] communicator is NULL");
  return *static_cast<Comm*>(c);
}

ncclDataType_t nccl_dtype(int32_t dtype) {
  switch (dtype) {
    case GN_F32: return ncclFloat32;
    case GN_F16: return ncclFloat16;
    case GN_BF16: return ncclBfloat16;
    case GN_F64: return ncclFloat64;
    case GN_I8: return ncclInt8;
    case GN_U8:
    case GN_BOOL: return ncclUint8;
    case GN_I32: return ncclInt32;
    case GN_I64: return ncclInt64;
    default: fail(GN_ERR_DTYPE, "[nccl] unknown dtype " + std::to_string(dtype));
  }
}

ncclRedOp_t nccl_op(int32_t op, int32_t dtype, const char* what) {
  if (op == GN_REDUCE_AVG && !gn_dtype_is_float(dtype))
    fail(GN_ERR_DTYPE, std::string("[nccl] ") + what + ": GN_REDUCE_AVG of a " + gn_dtype_name(dtype) +
                           " tensor (AVG is for floating dtypes; use GN_REDUCE_SUM)");
  if (dtype == GN_BOOL) return (op == GN_REDUCE_SUM || op == GN_REDUCE_MAX) ? ncclMax : ncclMin;
  switch (op) {
    case GN_REDUCE_SUM: return ncclSum;
    case GN_REDUCE_PROD: return ncclProd;
    case GN_REDUCE_MAX: return ncclMax;
    case GN_REDUCE_MIN: return ncclMin;
    default: return ncclAvg;
  }
}

void* ptr_of(const gn_tensor_view* v) { return static_cast<char*>(v->data) + v->byte_offset; }
size_t count_of(const gn_tensor_view* v) { return (size_t)gn_view_numel(v); }
cudaStream_t stream_of(void* s) { return static_cast<cudaStream_t>(s); }

// ---- vtable slots

gn_status* comm_unique_id(void*, gn_comm_id* id) {
  return sdk::guard(host(), [&] {
    static_assert(sizeof(ncclUniqueId) <= sizeof(gn_comm_id), "ncclUniqueId must fit gn_comm_id");
    ncclUniqueId u;
    ncclResult_t r = ncclGetUniqueId(&u);
    if (r != ncclSuccess) fail(GN_ERR_IO, std::string("[nccl] ncclGetUniqueId: ") + ncclGetErrorString(r));
    std::memcpy(id->bytes, &u, sizeof u);
  });
}

gn_status* join(const gn_comm_id* id, int32_t rank, int32_t size, int32_t device, int64_t timeout_ms, void** out) {
  return sdk::guard(host(), [&] {
    if (!id) fail(GN_ERR_INVALID_ARGUMENT, "[nccl] init: gn_comm_config.id is NULL (rank 0 makes it with unique_id)");
    auto c = std::make_unique<Comm>();
    c->device = device;
    c->rank = rank;
    c->size = size;
    c->timeout_ms = timeout_ms > 0 ? timeout_ms : kDefaultTimeoutMs;
    cuda_check(cudaSetDevice(device), "init: cudaSetDevice");
    ncclUniqueId u;
    std::memcpy(&u, id->bytes, sizeof u);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclResult_t r = ncclCommInitRankConfig(&c->comm, size, u, rank, &config);
    if (r != ncclSuccess && r != ncclInProgress)
      fail(GN_ERR_IO, std::string("[nccl] init: rank ") + std::to_string(rank) + " of " + std::to_string(size) + ": " +
                          ncclGetErrorString(r));
    c->poll("init", [] { return true; });
    cuda_check(cudaMalloc(&c->scratch, 4), "init: cudaMalloc");
    Comm* raw = c.get();
    c->watchdog = std::thread([raw] { raw->watch(); });
    *out = c.release();
  });
}

gn_status* comm_create(void*, const gn_comm_id* id, int32_t rank, int32_t size, int32_t device, void** out) {
  return join(id, rank, size, device, 0, out);
}

gn_status* comm_init(void*, const gn_comm_config* cfg, void** out) {
  return join(cfg->id, cfg->rank, cfg->world_size, cfg->device_index, cfg->timeout_ms, out);
}

gn_status* comm_destroy(void*, void* p) {
  return sdk::guard(host(), [&] {
    std::unique_ptr<Comm> c(static_cast<Comm*>(p));
    if (!c) return;
    c->stop = true;
    if (c->watchdog.joinable()) c->watchdog.join();
    cudaSetDevice(c->device);
    if (c->scratch) cudaFree(c->scratch);
    if (c->aborted || !c->comm) return;
    // Flush what was issued, then free; a failure or a timeout aborts instead.
    ncclResult_t r = ncclCommFinalize(c->comm);
    bool ok = r == ncclSuccess || r == ncclInProgress;
    if (ok) {
      try {
        c->poll(
            "destroy", [] { return true; }, 60000);
      } catch (const sdk::Error&) {
        ok = false;
      }
    }
    if (c->aborted) return;
    if (ok)
      ncclCommDestroy(c->comm);
    else
      ncclCommAbort(c->comm);
  });
}

gn_status* comm_all_reduce(void*, void* p, const gn_tensor_view* send, const gn_tensor_view* recv, int32_t op,
                           void* stream) {
  return sdk::guard(host(), [&] {
    Comm& c = comm_of(p);
    ncclRedOp_t o = nccl_op(op, recv->dtype, "all_reduce");
    c.issue("all_reduce", stream_of(stream), [&] {
      return ncclAllReduce(ptr_of(send), ptr_of(recv), count_of(recv), nccl_dtype(recv->dtype), o, c.comm,
                           stream_of(stream));
    });
  });
}

gn_status* comm_broadcast(void*, void* p, const gn_tensor_view* buf, int32_t root, void* stream) {
  return sdk::guard(host(), [&] {
    Comm& c = comm_of(p);
    c.issue("broadcast", stream_of(stream), [&] {
      return ncclBroadcast(ptr_of(buf), ptr_of(buf), count_of(buf), nccl_dtype(buf->dtype), root, c.comm,
                           stream_of(stream));
    });
  });
}

gn_status* comm_all_gather(void*, void* p, const gn_tensor_view* send, const gn_tensor_view* recv, void* stream) {
  return sdk::guard(host(), [&] {
    Comm& c = comm_of(p);
    c.issue("all_gather", stream_of(stream), [&] {
      return ncclAllGather(ptr_of(send), ptr_of(recv), count_of(send), nccl_dtype(send->dtype), c.comm,
                           stream_of(stream));
    });
  });
}

gn_status* comm_reduce_scatter(void*, void* p, const gn_tensor_view* send, const gn_tensor_view* recv, int32_t op,
                               void* stream) {
  return sdk::guard(host(), [&] {
    Comm& c = comm_of(p);
    ncclRedOp_t o = nccl_op(op, recv->dtype, "reduce_scatter");
    c.issue("reduce_scatter", stream_of(stream), [&] {
      return ncclReduceScatter(ptr_of(send), ptr_of(recv), count_of(recv), nccl_dtype(recv->dtype), o, c.comm,
                               stream_of(stream));
    });
  });
}

gn_status* comm_all_to_all(void*, void* p, const gn_tensor_view* send, const gn_tensor_view* recv, void* stream) {
  return sdk::guard(host(), [&] {
    Comm& c = comm_of(p);
    const size_t chunk = count_of(send) / (size_t)c.size;
    const size_t bytes = chunk * gn_dtype_size(send->dtype);
    const ncclDataType_t t = nccl_dtype(send->dtype);
    c.issue("all_to_all", stream_of(stream), [&] {
      ncclResult_t r = ncclGroupStart();
      for (int j = 0; j < c.size && r == ncclSuccess; ++j) {
        r = ncclSend(static_cast<char*>(ptr_of(send)) + j * bytes, chunk, t, j, c.comm, stream_of(stream));
        if (r == ncclSuccess)
          r = ncclRecv(static_cast<char*>(ptr_of(recv)) + j * bytes, chunk, t, j, c.comm, stream_of(stream));
      }
      ncclResult_t e = ncclGroupEnd();
      return r != ncclSuccess ? r : e;
    });
  });
}

gn_status* comm_send(void*, void* p, const gn_tensor_view* buf, int32_t peer, int32_t, void* stream) {
  return sdk::guard(host(), [&] {
    Comm& c = comm_of(p);
    c.issue("send", stream_of(stream), [&] {
      return ncclSend(ptr_of(buf), count_of(buf), nccl_dtype(buf->dtype), peer, c.comm, stream_of(stream));
    });
  });
}

gn_status* comm_recv(void*, void* p, const gn_tensor_view* buf, int32_t peer, int32_t, void* stream) {
  return sdk::guard(host(), [&] {
    Comm& c = comm_of(p);
    c.issue("recv", stream_of(stream), [&] {
      return ncclRecv(ptr_of(buf), count_of(buf), nccl_dtype(buf->dtype), peer, c.comm, stream_of(stream));
    });
  });
}

// An all-reduce of 4 bytes: enqueued like any collective; synchronize() waits for it.
gn_status* comm_barrier(void*, void* p, void* stream) {
  return sdk::guard(host(), [&] {
    Comm& c = comm_of(p);
    c.issue("barrier", stream_of(stream),
            [&] { return ncclAllReduce(c.scratch, c.scratch, 1, ncclInt32, ncclSum, c.comm, stream_of(stream)); });
  });
}

gn_status* comm_synchronize(void*, void* p, void* stream, int64_t timeout_ms) {
  return sdk::guard(host(), [&] {
    Comm& c = comm_of(p);
    c.check_healthy("synchronize");
    cuda_check(cudaSetDevice(c.device), "synchronize");
    cudaEvent_t ev;
    cuda_check(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "synchronize: cudaEventCreate");
    struct Destroy {
      cudaEvent_t e;
      ~Destroy() { cudaEventDestroy(e); }
    } destroy{ev};
    cuda_check(cudaEventRecord(ev, stream_of(stream)), "synchronize: cudaEventRecord");
    c.poll(
        "synchronize",
        [&] {
          cudaError_t q = cudaEventQuery(ev);
          if (q == cudaErrorNotReady) return false;
          cuda_check(q, "synchronize: cudaEventQuery");
          return true;
        },
        timeout_ms);
  });
}

gn_status* comm_abort(void*, void* p) {
  return sdk::guard(host(), [&] {
    Comm& c = comm_of(p);
    c.set_error(GN_ERR_ABORTED, "aborted on rank " + std::to_string(c.rank));
    c.abort_comm();
  });
}

gn_status* comm_error(void*, void* p) {
  if (!p) return host()->status_new(GN_ERR_INVALID_ARGUMENT, "[nccl] communicator is NULL");
  Comm& c = *static_cast<Comm*>(p);
  {
    std::lock_guard<std::mutex> g(c.err_mu);
    if (c.err_code != GN_OK) return host()->status_new(c.err_code, c.err_msg.c_str());
  }
  ncclResult_t async = ncclSuccess;
  ncclCommGetAsyncError(c.comm, &async);
  if (async == ncclSuccess || async == ncclInProgress) return nullptr;
  return host()->status_new(GN_ERR_ABORTED, (std::string("[nccl] ") + ncclGetErrorString(async)).c_str());
}

void init(const gn_host_api* h, gn_plugin_info*) {
  static gn_comm_vtable vt = [] {
    gn_comm_vtable v{};
    GN_SDK_COMM_SLOTS(v);
    v.name = "nccl";
    v.device_type = "cuda";
    v.unique_id = comm_unique_id;
    return v;
  }();
  sdk::throw_if(h, h->register_comm(h->host_ctx, &vt));
}

}  // namespace
}  // namespace gn::nccl

GN_SDK_PLUGIN("nccl", "0.1.0", "NCCL communicator for cuda tensors (non-blocking, aborts on a dead peer)",
              gn::nccl::init)

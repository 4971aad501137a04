// backends/gloo/plugin.cpp - the Gloo communicator for "cpu" tensors over TCP
// -> libgenesis_plugin_gloo.so.  Every collective is one of Gloo's: allreduce,
// broadcast, allgather, alltoall, barrier, and unbound-buffer send/recv;
// reduce_scatter is Gloo's allreduce followed by keeping this rank's chunk.
//
// Rendezvous: the ranks exchange their TCP addresses through the store the
// caller passes in gn_comm_config (Gloo's connectFullMesh over a Store adapter).
// Calls run to completion before returning (cpu streams are synchronous).
//
// dtypes: f32, f64, i8, u8, i32, i64 reduce natively.  f16 and bf16 have no
// native Gloo reduction here: they are widened to f32, reduced, and rounded
// back once (round to nearest even), so the result is the f32 reduction rounded
// to the dtype.  bool reduces as logical or (SUM, MAX) and logical and (PROD,
// MIN).  AVG is the SUM divided by the world size, for floating dtypes only.
// Data movement (broadcast, all_gather, all_to_all, send, recv) takes every dtype.
//
// Failures: a peer that closes its connections (it died) makes the pending call
// fail with GN_ERR_ABORTED; one that stops answering, GN_ERR_TIMEOUT after the
// configured timeout.  The first failure sticks: later calls repeat it.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>
#include <gloo/types.h>

#include "genesis/sdk/comm.h"
#include "genesis/sdk/convert.h"
#include "genesis/sdk/plugin.h"

namespace gn::gloo {
namespace {

using gn::sdk::fail;
using Ms = std::chrono::milliseconds;

const gn_host_api* host() { return gn::sdk::host_ref(); }

constexpr int64_t kDefaultTimeoutMs = 30 * 60 * 1000;
constexpr uint8_t kPointToPointSlotPrefix = 0x10;  // beyond Gloo's collective prefixes (0x01..0x08)

// ---- store adapter: Gloo's rendezvous over the caller's gn_comm_store

class StoreAdapter : public ::gloo::rendezvous::Store {
 public:
  StoreAdapter(const gn_comm_store* s, int64_t timeout_ms) : s_(s), timeout_ms_(timeout_ms) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    sdk::throw_if(host(), s_->set(s_->ctx, key.c_str(), data.data(), data.size()));
  }
  std::vector<char> get(const std::string& key) override {
    std::vector<char> buf(512);
    size_t n = 0;
    sdk::throw_if(host(), s_->get(s_->ctx, key.c_str(), buf.data(), buf.size(), &n, timeout_ms_));
    if (n > buf.size()) {
      buf.resize(n);
      sdk::throw_if(host(), s_->get(s_->ctx, key.c_str(), buf.data(), buf.size(), &n, timeout_ms_));
    }
    buf.resize(n);
    return buf;
  }
  void wait(const std::vector<std::string>& keys) override { wait(keys, Ms(timeout_ms_)); }
  void wait(const std::vector<std::string>& keys, const Ms& timeout) override {
    for (const std::string& k : keys) {
      size_t n = 0;
      sdk::throw_if(host(), s_->get(s_->ctx, k.c_str(), nullptr, 0, &n, timeout.count()));
    }
  }

 private:
  const gn_comm_store* s_;
  int64_t timeout_ms_;
};

// ---- one communicator

struct Comm {
  std::shared_ptr<::gloo::rendezvous::Context> ctx;
  Ms timeout{kDefaultTimeoutMs};
  int rank = 0, size = 1;
  uint32_t next_tag = 0;  // collectives run in one order on every rank: the n-th gets tag n
  std::mutex mu;          // one call at a time on the Gloo context
  std::mutex err_mu;
  int32_t err_code = GN_OK;
  std::string err_msg;

  void set_error(int32_t code, const std::string& msg) {
    std::lock_guard<std::mutex> g(err_mu);
    if (err_code == GN_OK) err_code = code, err_msg = msg;
  }
  void check_healthy(const char* what) {
    std::lock_guard<std::mutex> g(err_mu);
    if (err_code != GN_OK)
      fail(err_code, std::string("[gloo] ") + what + ": the communicator failed earlier: " + err_msg);
  }
};

Comm& comm_of(void* c) {
  if (!c) fail(GN_ERR_INVALID_ARGUMENT, "[gloo] communicator is NULL");
  return *static_cast<Comm*>(c);
}

// Run one Gloo call under the communicator's lock, turning Gloo's exceptions
// into the sticky error: a timeout, or a lost peer.
template <class F>
gn_status* run(void* c, const char* what, F&& f) {
  return sdk::guard(host(), [&] {
    Comm& comm = comm_of(c);
    std::lock_guard<std::mutex> g(comm.mu);
    comm.check_healthy(what);
    try {
      f(comm);
    } catch (const ::gloo::Exception& e) {
      const std::string msg = e.what();
      const bool timed_out = msg.find("Timed out") != std::string::npos || msg.find("timed out") != std::string::npos;
      const int32_t code = timed_out ? GN_ERR_TIMEOUT : GN_ERR_ABORTED;
      const std::string text =
          std::string("[gloo] ") + what + " on rank " + std::to_string(comm.rank) + ": " +
          (timed_out ? "a peer did not answer within " + std::to_string(comm.timeout.count()) + " ms"
                     : std::string("a peer closed its connection (it exited or was aborted)")) +
          " (" + msg + ")";
      comm.set_error(code, text);
      fail(code, text);
    }
  });
}

size_t bytes_of(const gn_tensor_view* v) { return (size_t)gn_view_numel(v) * gn_dtype_size(v->dtype); }
char* ptr_of(const gn_tensor_view* v) { return static_cast<char*>(v->data) + v->byte_offset; }

// ---- all_reduce on a buffer of n elements of T, in place

// Gloo's element-wise reductions, c = a (op) b over n elements.
using ReduceFn = void (*)(void*, const void*, const void*, size_t);

template <class T>
ReduceFn reduce_fn(int32_t op) {
  switch (op) {
    case GN_REDUCE_SUM:
    case GN_REDUCE_AVG: return static_cast<ReduceFn>(&::gloo::sum<T>);
    case GN_REDUCE_PROD: return static_cast<ReduceFn>(&::gloo::product<T>);
    case GN_REDUCE_MAX: return static_cast<ReduceFn>(&::gloo::max<T>);
    default: return static_cast<ReduceFn>(&::gloo::min<T>);
  }
}

template <class T>
void allreduce_typed(Comm& c, T* data, size_t n, int32_t op) {
  ::gloo::AllreduceOptions opts(c.ctx);
  opts.setOutput(data, n);
  opts.setReduceFunction(reduce_fn<T>(op));
  opts.setTag(c.next_tag++);
  opts.setTimeout(c.timeout);
  ::gloo::allreduce(opts);
  if (op == GN_REDUCE_AVG)
    for (size_t i = 0; i < n; ++i) data[i] = data[i] / static_cast<T>(c.size);
}

// f16/bf16: widen to f32, reduce, round back once.
void allreduce_half(Comm& c, uint16_t* data, size_t n, int32_t op, bool bf16) {
  std::vector<float> wide(n);
  for (size_t i = 0; i < n; ++i) wide[i] = bf16 ? sdk::bf16_to_float(data[i]) : sdk::half_to_float(data[i]);
  allreduce_typed<float>(c, wide.data(), n, op);
  for (size_t i = 0; i < n; ++i) data[i] = bf16 ? sdk::float_to_bf16(wide[i]) : sdk::float_to_half(wide[i]);
}

void allreduce_inplace(Comm& c, char* data, size_t n, int32_t dtype, int32_t op) {
  if (op == GN_REDUCE_AVG && !gn_dtype_is_float(dtype))
    fail(GN_ERR_DTYPE, std::string("[gloo] all_reduce: GN_REDUCE_AVG of a ") + gn_dtype_name(dtype) +
                           " tensor (AVG is for floating dtypes; use GN_REDUCE_SUM)");
  switch (dtype) {
    case GN_F32: return allreduce_typed(c, reinterpret_cast<float*>(data), n, op);
    case GN_F64: return allreduce_typed(c, reinterpret_cast<double*>(data), n, op);
    case GN_I8: return allreduce_typed(c, reinterpret_cast<int8_t*>(data), n, op);
    case GN_U8: return allreduce_typed(c, reinterpret_cast<uint8_t*>(data), n, op);
    case GN_I32: return allreduce_typed(c, reinterpret_cast<int32_t*>(data), n, op);
    case GN_I64: return allreduce_typed(c, reinterpret_cast<int64_t*>(data), n, op);
    case GN_F16: return allreduce_half(c, reinterpret_cast<uint16_t*>(data), n, op, false);
    case GN_BF16: return allreduce_half(c, reinterpret_cast<uint16_t*>(data), n, op, true);
    case GN_BOOL: {
      // Values are 0/1: or = max, and = min.
      const int32_t as = (op == GN_REDUCE_SUM || op == GN_REDUCE_MAX) ? GN_REDUCE_MAX : GN_REDUCE_MIN;
      return allreduce_typed(c, reinterpret_cast<uint8_t*>(data), n, as);
    }
    default: fail(GN_ERR_DTYPE, "[gloo] all_reduce: unknown dtype " + std::to_string(dtype));
  }
}

// ---- vtable slots

gn_status* comm_create(void*, const gn_comm_id*, int32_t, int32_t, int32_t, void**) {
  return host()->status_new(GN_ERR_UNSUPPORTED,
                            "[gloo] the gloo communicator meets over a store: create it with gn_comm_config.store");
}

gn_status* comm_init(void*, const gn_comm_config* cfg, void** out) {
  return sdk::guard(host(), [&] {
    if (!cfg->store)
      fail(GN_ERR_INVALID_ARGUMENT, "[gloo] init: gn_comm_config.store is NULL (gloo meets over a store)");
    auto c = std::make_unique<Comm>();
    c->rank = cfg->rank;
    c->size = cfg->world_size;
    c->timeout = Ms(cfg->timeout_ms > 0 ? cfg->timeout_ms : kDefaultTimeoutMs);
    ::gloo::transport::tcp::attr attr;
    if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname) {
      attr.iface = ifname;
    } else if (cfg->local_address && *cfg->local_address) {
      attr.hostname = cfg->local_address;
    } else {
      char name[256] = {};
      gethostname(name, sizeof name - 1);
      attr.hostname = name;
    }
    try {
      auto device = ::gloo::transport::tcp::CreateDevice(attr);
      StoreAdapter base(cfg->store, c->timeout.count());
      ::gloo::rendezvous::PrefixStore store(cfg->prefix ? cfg->prefix : "", base);
      c->ctx = std::make_shared<::gloo::rendezvous::Context>(c->rank, c->size);
      c->ctx->setTimeout(c->timeout);
      c->ctx->connectFullMesh(store, device);
    } catch (const ::gloo::Exception& e) {
      fail(GN_ERR_IO, std::string("[gloo] init: rank ") + std::to_string(c->rank) + " of " + std::to_string(c->size) +
                          " could not connect to its peers: " + e.what());
    }
    *out = c.release();
  });
}

gn_status* comm_destroy(void*, void* c) {
  return sdk::guard(host(), [&] { delete static_cast<Comm*>(c); });
}

gn_status* comm_all_reduce(void*, void* c, const gn_tensor_view* send, const gn_tensor_view* recv, int32_t op, void*) {
  return run(c, "all_reduce", [&](Comm& comm) {
    const size_t n = (size_t)gn_view_numel(recv);
    if (ptr_of(send) != ptr_of(recv)) std::memcpy(ptr_of(recv), ptr_of(send), bytes_of(recv));
    if (n) allreduce_inplace(comm, ptr_of(recv), n, recv->dtype, op);
  });
}

// all_gather and all_to_all: one gloo collective (with its Options) from send's bytes into recv's.
template <class Options>
void send_to_recv(Comm& comm, const gn_tensor_view* send, const gn_tensor_view* recv, void (*collective)(Options&)) {
  if (!bytes_of(send)) return;
  Options opts(comm.ctx);
  opts.setInput(reinterpret_cast<uint8_t*>(ptr_of(send)), bytes_of(send));
  opts.setOutput(reinterpret_cast<uint8_t*>(ptr_of(recv)), bytes_of(recv));
  opts.setTag(comm.next_tag++);
  opts.setTimeout(comm.timeout);
  collective(opts);
}

// send (send true) and recv: buf's bytes to or from peer under tag.
void point_to_point(Comm& comm, const gn_tensor_view* buf, int32_t peer, int32_t tag, bool send) {
  if (!bytes_of(buf)) return;
  auto ub = comm.ctx->createUnboundBuffer(ptr_of(buf), bytes_of(buf));
  const auto slot = ::gloo::Slot::build(kPointToPointSlotPrefix, (uint32_t)tag);
  if (send) {
    ub->send(peer, slot);
    ub->waitSend(comm.timeout);
  } else {
    ub->recv(peer, slot);
    ub->waitRecv(comm.timeout);
  }
}

gn_status* comm_broadcast(void*, void* c, const gn_tensor_view* buf, int32_t root, void*) {
  return run(c, "broadcast", [&](Comm& comm) {
    if (!bytes_of(buf)) return;
    ::gloo::BroadcastOptions opts(comm.ctx);
    opts.setOutput(reinterpret_cast<uint8_t*>(ptr_of(buf)), bytes_of(buf));
    opts.setRoot(root);
    opts.setTag(comm.next_tag++);
    opts.setTimeout(comm.timeout);
    ::gloo::broadcast(opts);
  });
}

gn_status* comm_all_gather(void*, void* c, const gn_tensor_view* send, const gn_tensor_view* recv, void*) {
  return run(c, "all_gather",
             [&](Comm& comm) { send_to_recv<::gloo::AllgatherOptions>(comm, send, recv, ::gloo::allgather); });
}

gn_status* comm_reduce_scatter(void*, void* c, const gn_tensor_view* send, const gn_tensor_view* recv, int32_t op,
                               void*) {
  return run(c, "reduce_scatter", [&](Comm& comm) {
    const size_t n = (size_t)gn_view_numel(send), chunk = bytes_of(recv);
    if (!n) return;
    std::vector<char> full(ptr_of(send), ptr_of(send) + bytes_of(send));
    allreduce_inplace(comm, full.data(), n, send->dtype, op);
    std::memcpy(ptr_of(recv), full.data() + (size_t)comm.rank * chunk, chunk);
  });
}

gn_status* comm_all_to_all(void*, void* c, const gn_tensor_view* send, const gn_tensor_view* recv, void*) {
  return run(c, "all_to_all",
             [&](Comm& comm) { send_to_recv<::gloo::AlltoallOptions>(comm, send, recv, ::gloo::alltoall); });
}

gn_status* comm_send(void*, void* c, const gn_tensor_view* buf, int32_t peer, int32_t tag, void*) {
  return run(c, "send", [&](Comm& comm) { point_to_point(comm, buf, peer, tag, true); });
}

gn_status* comm_recv(void*, void* c, const gn_tensor_view* buf, int32_t peer, int32_t tag, void*) {
  return run(c, "recv", [&](Comm& comm) { point_to_point(comm, buf, peer, tag, false); });
}

gn_status* comm_barrier(void*, void* c, void*) {
  return run(c, "barrier", [&](Comm& comm) {
    ::gloo::BarrierOptions opts(comm.ctx);
    opts.setTag(comm.next_tag++);
    opts.setTimeout(comm.timeout);
    ::gloo::barrier(opts);
  });
}

// Calls finish before returning: only the sticky error is left to report.
gn_status* comm_synchronize(void*, void* c, void*, int64_t) {
  return sdk::guard(host(), [&] { comm_of(c).check_healthy("synchronize"); });
}

gn_status* comm_abort(void*, void* c) {
  return sdk::guard(host(), [&] {
    Comm& comm = comm_of(c);
    comm.set_error(GN_ERR_ABORTED, "aborted on rank " + std::to_string(comm.rank));
    // Closing the connections wakes a call blocked on them (possibly on another
    // thread) and tells the peers.
    if (comm.ctx) comm.ctx->closeConnections();
  });
}

gn_status* comm_error(void*, void* c) {
  if (!c) return host()->status_new(GN_ERR_INVALID_ARGUMENT, "[gloo] communicator is NULL");
  Comm& comm = *static_cast<Comm*>(c);
  std::lock_guard<std::mutex> g(comm.err_mu);
  return comm.err_code == GN_OK ? nullptr : host()->status_new(comm.err_code, comm.err_msg.c_str());
}

void init(const gn_host_api* h, gn_plugin_info*) {
  static gn_comm_vtable vt = [] {
    gn_comm_vtable v{};
    GN_SDK_COMM_SLOTS(v);
    v.name = "gloo";
    v.device_type = "cpu";
    v.unique_id = nullptr;  // the store is the rendezvous
    return v;
  }();
  sdk::throw_if(h, h->register_comm(h->host_ctx, &vt));
}

}  // namespace
}  // namespace gn::gloo

GN_SDK_PLUGIN("gloo", "0.1.0", "Gloo communicator for cpu tensors over TCP (collectives, send/recv)", gn::gloo::init)

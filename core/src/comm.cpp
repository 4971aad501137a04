// core/src/comm.cpp - gn_comm_*: the C API over the communicator plugins
// (gn_comm_vtable).  The core checks handles, devices, dtypes and sizes, turns
// tensors into views and gn_stream into native streams; the plugin moves data.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "runtime.h"

// One process's member of a communicator.  Holds a copy of the serving vtable
// (later plugin loads may move rt->comms) and a runtime reference, so the
// plugin stays loaded while the communicator lives.
struct gn_comm {
  gn_runtime* rt = nullptr;
  gn_comm_vtable vt{};
  void* native = nullptr;
  int32_t rank = 0, world_size = 0;
  gn_device device{};  // the device of the communicator's type this rank uses
  std::string backend;
};

namespace genesis::core {
namespace {

// The comm vtable named `backend` (its name or its device type), or throw.
const gn_comm_vtable& comm_vtable(gn_runtime* rt, const char* backend, const char* fn) {
  for (const gn_comm_vtable& c : rt->comms)
    if (std::strcmp(c.name, backend) == 0) return c;
  for (const gn_comm_vtable& c : rt->comms)
    if (c.device_type && std::strcmp(c.device_type, backend) == 0) return c;
  std::string have;
  for (const gn_comm_vtable& c : rt->comms)
    have += (have.empty() ? "" : ", ") + std::string(c.name) + " (" + (c.device_type ? c.device_type : "?") + ")";
  fail(GN_ERR_NOT_FOUND, std::string(fn) + ": no communicator backend '" + backend +
                             "' is loaded (loaded: " + (have.empty() ? "none" : have) + ")");
}

gn_comm& live(gn_comm* comm, const char* fn) {
  require_non_null(fn, {{"comm", comm}});
  return *comm;
}

// A view of t after checking it suits comm: contiguous, on the comm's device.
gn_tensor_view comm_view(const gn_comm& c, const gn_tensor* t, const char* fn, const char* what) {
  check_live(t, kTensorMagic, fn, "tensor");
  if (!t) fail(GN_ERR_INVALID_ARGUMENT, std::string(fn) + ": " + what + " is NULL");
  const gn_device d = t->storage->device;
  if (d.type != c.device.type || d.index != c.device.index)
    fail(GN_ERR_DEVICE, std::string(fn) + ": " + what + " is on " + device_str(c.rt, d) + ", the " + c.backend +
                            " communicator moves " + device_str(c.rt, c.device) + " memory");
  if (!tensor_is_contiguous(t))
    fail(GN_ERR_INVALID_ARGUMENT, std::string(fn) + ": " + what + " " + shape_string(t->ndim, t->shape) +
                                      " is not contiguous; call gn_tensor_contiguous first");
  gn_tensor_view v;
  tensor_view(t, &v);
  return v;
}

void same_dtype(const gn_tensor* a, const gn_tensor* b, const char* fn) {
  if (a->dtype != b->dtype)
    fail(GN_ERR_DTYPE, std::string(fn) + ": send is " + gn_dtype_name(a->dtype) + ", recv is " +
                           gn_dtype_name(b->dtype) + "; they must match");
}

void numel_is(const gn_tensor* t, int64_t want, const char* fn, const char* what, const std::string& why) {
  if (tensor_numel(t) != want)
    fail(GN_ERR_SHAPE, std::string(fn) + ": " + what + " " + shape_string(t->ndim, t->shape) + " has " +
                           std::to_string(tensor_numel(t)) + " elements, expected " + std::to_string(want) + " (" +
                           why + ")");
}

void check_op(int32_t op, const char* fn) {
  if (op < GN_REDUCE_SUM || op > GN_REDUCE_AVG)
    fail(GN_ERR_INVALID_ARGUMENT,
         std::string(fn) + ": unknown reduce op " + std::to_string(op) + " (GN_REDUCE_SUM..GN_REDUCE_AVG are 0..4)");
}

void check_peer(const gn_comm& c, int32_t peer, const char* fn, const char* what) {
  if (peer < 0 || peer >= c.world_size)
    fail(GN_ERR_INDEX, std::string(fn) + ": " + what + " " + std::to_string(peer) + " is not a rank of this " +
                           std::to_string(c.world_size) + "-rank communicator");
}

void* native_stream(const gn_comm& c, gn_stream* s, const char* fn) {
  check_live(s, kStreamMagic, fn, "stream");
  if (!s) return current_stream(c.rt, c.device);
  if (s->device.type != c.device.type || s->device.index != c.device.index)
    fail(GN_ERR_DEVICE, std::string(fn) + ": stream belongs to " + device_str(c.rt, s->device) + ", not " +
                            device_str(c.rt, c.device));
  return s->native;
}

template <class Slot>
Slot need_slot(const gn_comm& c, Slot slot, const char* fn, const char* what) {
  if (!slot)
    fail(GN_ERR_UNSUPPORTED, std::string(fn) + ": the " + c.backend + " communicator has no " + what +
                                 " (a plugin built for an older ABI minor)");
  return slot;
}

// The collectives from send into recv (all_reduce, all_gather, reduce_scatter, all_to_all):
// the communicator and both views, after the checks all of them make.
struct SendRecv {
  gn_comm& c;
  gn_tensor_view s, r;
};
SendRecv send_recv(gn_comm* comm, gn_tensor* send, gn_tensor* recv, const char* fn) {
  require_non_null(fn, {{"send", send}, {"recv", recv}});
  gn_comm& c = live(comm, fn);
  gn_tensor_view s = comm_view(c, send, fn, "send"), r = comm_view(c, recv, fn, "recv");
  same_dtype(send, recv, fn);
  return {c, s, r};
}

// gn_comm_send (send true) and gn_comm_recv: the same checks, then the plugin's send or recv slot.
gn_status* point_to_point(gn_comm* comm, gn_tensor* buf, int32_t peer, int32_t tag, gn_stream* stream, bool send) {
  return guarded([&] {
    const char* fn = send ? "gn_comm_send" : "gn_comm_recv";
    require_non_null(fn, {{"buf", buf}});
    gn_comm& c = live(comm, fn);
    gn_tensor_view b = comm_view(c, buf, fn, "buf");
    check_peer(c, peer, fn, "peer");
    if (peer == c.rank)
      fail(GN_ERR_INVALID_ARGUMENT, std::string(fn) + ": peer " + std::to_string(peer) + " is this rank");
    auto slot = need_slot(c, send ? c.vt.send : c.vt.recv, fn, send ? "send" : "recv");
    throw_if(slot(c.vt.ctx, c.native, &b, peer, tag, native_stream(c, stream, fn)));
  });
}

}  // namespace
}  // namespace genesis::core

using namespace genesis::core;

extern "C" {

const char* gn_comm_backend_for(gn_runtime* rt, const char* device_type) {
  if (!rt || !device_type) return nullptr;
  for (const gn_comm_vtable& c : rt->comms)
    if (c.device_type && std::strcmp(c.device_type, device_type) == 0) return c.name;
  return nullptr;
}

gn_status* gn_comm_unique_id(gn_runtime* rt, const char* backend, gn_comm_id* out) {
  return guarded([&] {
    require_non_null("gn_comm_unique_id", {{"rt", rt}, {"backend", backend}, {"out", out}});
    check_runtime_arg(rt, "gn_comm_unique_id");
    const gn_comm_vtable& vt = comm_vtable(rt, backend, "gn_comm_unique_id");
    if (!vt.unique_id)
      fail(GN_ERR_UNSUPPORTED, std::string("gn_comm_unique_id: the ") + vt.name +
                                   " communicator needs no bootstrap id (it meets over the store)");
    std::memset(out, 0, sizeof *out);
    throw_if(vt.unique_id(vt.ctx, out));
  });
}

gn_status* gn_comm_create(gn_runtime* rt, const char* backend, const gn_comm_config* config, gn_comm** out) {
  return guarded([&] {
    require_non_null("gn_comm_create", {{"rt", rt}, {"backend", backend}, {"config", config}, {"out", out}});
    check_runtime_arg(rt, "gn_comm_create");
    *out = nullptr;
    const gn_comm_vtable& vt = comm_vtable(rt, backend, "gn_comm_create");
    gn_comm_config cfg;
    std::memset(&cfg, 0, sizeof cfg);
    std::memcpy(&cfg, config, std::min(config->struct_size, sizeof cfg));
    cfg.struct_size = sizeof cfg;
    if (config->struct_size < GN_STRUCT_END(gn_comm_config, timeout_ms))
      fail(GN_ERR_INVALID_ARGUMENT, "gn_comm_create: config->struct_size is " + std::to_string(config->struct_size) +
                                        "; set it to sizeof(gn_comm_config)");
    if (cfg.world_size < 1 || cfg.rank < 0 || cfg.rank >= cfg.world_size)
      fail(GN_ERR_INVALID_ARGUMENT, "gn_comm_create: rank " + std::to_string(cfg.rank) + " of world size " +
                                        std::to_string(cfg.world_size) + " (need 0 <= rank < world_size)");
    const int type = device_type_intern(rt, vt.device_type ? vt.device_type : "cpu");
    gn_device dev;
    std::memset(&dev, 0, sizeof dev);
    dev.type = type;
    dev.index = cfg.device_index;
    device_type_of(rt, dev, "gn_comm_create");
    auto c = std::make_unique<gn_comm>();
    c->rt = rt;
    c->vt = vt;
    c->rank = cfg.rank;
    c->world_size = cfg.world_size;
    c->device = dev;
    c->backend = vt.name;
    if (vt.init) {
      throw_if(vt.init(vt.ctx, &cfg, &c->native));
    } else {
      if (!cfg.id)
        fail(GN_ERR_UNSUPPORTED, std::string("gn_comm_create: the ") + vt.name +
                                     " communicator (ABI 1.1) needs config->id from gn_comm_unique_id");
      throw_if(vt.create(vt.ctx, cfg.id, cfg.rank, cfg.world_size, cfg.device_index, &c->native));
    }
    runtime_retain(rt);
    *out = c.release();
  });
}

void gn_comm_destroy(gn_comm* comm) {
  if (!comm) return;
  gn_status* st = comm->vt.destroy ? comm->vt.destroy(comm->vt.ctx, comm->native) : nullptr;
  gn_status_free(st);  // nothing to report to: the communicator is gone either way
  gn_runtime* rt = comm->rt;
  delete comm;
  runtime_release(rt);
}

int32_t gn_comm_rank(const gn_comm* comm) { return comm ? comm->rank : -1; }
int32_t gn_comm_size(const gn_comm* comm) { return comm ? comm->world_size : 0; }
const char* gn_comm_backend(const gn_comm* comm) { return comm ? comm->backend.c_str() : ""; }

gn_status* gn_comm_all_reduce(gn_comm* comm, gn_tensor* send, gn_tensor* recv, int32_t op, gn_stream* stream) {
  return guarded([&] {
    const char* fn = "gn_comm_all_reduce";
    auto [c, s, r] = send_recv(comm, send, recv, fn);
    numel_is(recv, tensor_numel(send), fn, "recv", "the size of send");
    check_op(op, fn);
    throw_if(c.vt.all_reduce(c.vt.ctx, c.native, &s, &r, op, native_stream(c, stream, fn)));
  });
}

gn_status* gn_comm_broadcast(gn_comm* comm, gn_tensor* buf, int32_t root, gn_stream* stream) {
  return guarded([&] {
    const char* fn = "gn_comm_broadcast";
    require_non_null(fn, {{"buf", buf}});
    gn_comm& c = live(comm, fn);
    gn_tensor_view b = comm_view(c, buf, fn, "buf");
    check_peer(c, root, fn, "root");
    throw_if(c.vt.broadcast(c.vt.ctx, c.native, &b, root, native_stream(c, stream, fn)));
  });
}

gn_status* gn_comm_all_gather(gn_comm* comm, gn_tensor* send, gn_tensor* recv, gn_stream* stream) {
  return guarded([&] {
    const char* fn = "gn_comm_all_gather";
    auto [c, s, r] = send_recv(comm, send, recv, fn);
    numel_is(recv, tensor_numel(send) * c.world_size, fn, "recv", "world_size * numel(send)");
    throw_if(c.vt.all_gather(c.vt.ctx, c.native, &s, &r, native_stream(c, stream, fn)));
  });
}

gn_status* gn_comm_reduce_scatter(gn_comm* comm, gn_tensor* send, gn_tensor* recv, int32_t op, gn_stream* stream) {
  return guarded([&] {
    const char* fn = "gn_comm_reduce_scatter";
    auto [c, s, r] = send_recv(comm, send, recv, fn);
    numel_is(send, tensor_numel(recv) * c.world_size, fn, "send", "world_size * numel(recv)");
    check_op(op, fn);
    throw_if(c.vt.reduce_scatter(c.vt.ctx, c.native, &s, &r, op, native_stream(c, stream, fn)));
  });
}

gn_status* gn_comm_all_to_all(gn_comm* comm, gn_tensor* send, gn_tensor* recv, gn_stream* stream) {
  return guarded([&] {
    const char* fn = "gn_comm_all_to_all";
    auto [c, s, r] = send_recv(comm, send, recv, fn);
    numel_is(recv, tensor_numel(send), fn, "recv", "the size of send");
    if (tensor_numel(send) % c.world_size)
      fail(GN_ERR_SHAPE, std::string(fn) + ": send has " + std::to_string(tensor_numel(send)) +
                             " elements, not divisible by the world size " + std::to_string(c.world_size));
    auto slot = need_slot(c, c.vt.all_to_all, fn, "all_to_all");
    throw_if(slot(c.vt.ctx, c.native, &s, &r, native_stream(c, stream, fn)));
  });
}

gn_status* gn_comm_send(gn_comm* comm, gn_tensor* buf, int32_t peer, int32_t tag, gn_stream* stream) {
  return point_to_point(comm, buf, peer, tag, stream, true);
}

gn_status* gn_comm_recv(gn_comm* comm, gn_tensor* buf, int32_t peer, int32_t tag, gn_stream* stream) {
  return point_to_point(comm, buf, peer, tag, stream, false);
}

gn_status* gn_comm_barrier(gn_comm* comm, gn_stream* stream) {
  return guarded([&] {
    gn_comm& c = live(comm, "gn_comm_barrier");
    throw_if(c.vt.barrier(c.vt.ctx, c.native, native_stream(c, stream, "gn_comm_barrier")));
  });
}

gn_status* gn_comm_synchronize(gn_comm* comm, gn_stream* stream, int64_t timeout_ms) {
  return guarded([&] {
    const char* fn = "gn_comm_synchronize";
    gn_comm& c = live(comm, fn);
    void* s = native_stream(c, stream, fn);
    if (c.vt.synchronize) {
      throw_if(c.vt.synchronize(c.vt.ctx, c.native, s, timeout_ms));
      return;
    }
    // A minor-1 plugin: the device's stream synchronisation (no timeout).
    DeviceType& dt = device_type_of(c.rt, c.device, fn);
    if (dt.vt->stream_synchronize) throw_if(dt.vt->stream_synchronize(dt.vt->ctx, c.device.index, s));
  });
}

gn_status* gn_comm_abort(gn_comm* comm) {
  return guarded([&] {
    gn_comm& c = live(comm, "gn_comm_abort");
    throw_if(need_slot(c, c.vt.abort, "gn_comm_abort", "abort")(c.vt.ctx, c.native));
  });
}

gn_status* gn_comm_error(gn_comm* comm) {
  if (!comm) return make_status(GN_ERR_INVALID_ARGUMENT, "gn_comm_error: comm is NULL");
  return comm->vt.error ? comm->vt.error(comm->vt.ctx, comm->native) : nullptr;
}

}  // extern "C"

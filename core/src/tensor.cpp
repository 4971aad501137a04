// core/src/tensor.cpp - storages, tensor handles, host/device copies.
#include <cstring>
#include <vector>

#include "genesis/sdk/convert.h"
#include "runtime.h"

namespace genesis::core {

size_t elem_size(int32_t dtype) { return gn_dtype_size(dtype); }

Storage* storage_alloc(gn_runtime* rt, gn_device dev, size_t bytes) {
  DeviceType& dt = rt->device_types[dev.type];
  void* ptr = nullptr;
  if (bytes) {
    gn_status* st = dt.vt->alloc(dt.vt->ctx, dev.index, bytes, current_stream(rt, dev), &ptr);
    if (st) {
      std::string msg = st->msg;
      int32_t code = st->code;
      delete st;
      fail(code, "allocating " + std::to_string(bytes) + " bytes on " + device_str(rt, dev) + ": " + msg);
    }
  }
  auto* s = new Storage;
  s->rt = rt;
  s->device = dev;
  s->data = ptr;
  s->bytes = bytes;
  s->free_fn = dt.vt->free;
  s->free_ctx = dt.vt->ctx;
  runtime_retain(rt);
  return s;
}

void storage_release(Storage* s) {
  if (s->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  gn_runtime* rt = s->rt;
  if (s->dlpack) {
    if (s->dlpack->deleter) s->dlpack->deleter(s->dlpack);
  } else if (s->data) {
    gn_status* st = s->free_fn(s->free_ctx, s->device.index, s->data, current_stream(rt, s->device));
    delete st;  // nothing sensible to do with a failed free in a destructor
  }
  delete s;
  runtime_release(rt);
}

void contiguous_strides(int32_t ndim, const int64_t* shape, int64_t* strides) {
  int64_t st = 1;
  for (int32_t d = ndim - 1; d >= 0; --d) {
    strides[d] = st;
    st *= shape[d] > 1 ? shape[d] : 1;
  }
}

int64_t checked_numel(int32_t ndim, const int64_t* shape, size_t item_size, const char* fn) {
  int64_t numel = 1, extent = item_size ? (int64_t)item_size : 1;
  for (int32_t d = 0; d < ndim; ++d) {
    if (shape[d] < 0)
      fail(GN_ERR_SHAPE, std::string(fn) + ": negative dimension in shape " + shape_string(ndim, shape));
    if (__builtin_mul_overflow(extent, shape[d] > 1 ? shape[d] : 1, &extent))
      fail(GN_ERR_INVALID_ARGUMENT, std::string(fn) + ": shape " + shape_string(ndim, shape) + " of " +
                                        std::to_string(item_size) + "-byte elements is too large (size overflows)");
    numel *= shape[d];  // after the check: cannot overflow while extent (>= numel) does not
  }
  return numel;
}

gn_tensor* tensor_new(Storage* s, int32_t dtype, int32_t ndim, const int64_t* shape, const int64_t* strides,
                      int64_t offset) {
  auto* t = new gn_tensor;
  t->storage = s;
  t->dtype = dtype;
  t->ndim = ndim;
  t->offset = offset;
  for (int32_t d = 0; d < ndim; ++d) {
    t->shape[d] = shape[d];
    t->strides[d] = strides[d];
  }
  return t;
}

int64_t tensor_numel(const gn_tensor* t) {
  int64_t n = 1;
  for (int32_t d = 0; d < t->ndim; ++d) n *= t->shape[d];
  return n;
}

gn_tensor* tensor_empty(gn_runtime* rt, int32_t ndim, const int64_t* shape, int32_t dtype, gn_device dev,
                        const char* fn) {
  if (ndim < 0 || ndim > GN_MAX_DIMS)
    fail(GN_ERR_SHAPE, "rank " + std::to_string(ndim) + " exceeds the maximum of " + std::to_string(GN_MAX_DIMS));
  if (dtype < 0 || dtype >= GN_DTYPE_COUNT) fail(GN_ERR_DTYPE, "invalid dtype " + std::to_string(dtype));
  int64_t numel = checked_numel(ndim, shape, elem_size(dtype), fn);
  int64_t strides[GN_MAX_DIMS];
  contiguous_strides(ndim, shape, strides);
  Storage* s = storage_alloc(rt, dev, (size_t)numel * elem_size(dtype));
  return tensor_new(s, dtype, ndim, shape, strides, 0);
}

void tensor_release(gn_tensor* t) {
  check_live(t, kTensorMagic, "gn_tensor_release", "tensor");
  if (!t || t->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  storage_release(t->storage);
  retire(t);
}

bool tensor_is_contiguous(const gn_tensor* t) {
  int64_t expect = 1;
  for (int32_t d = t->ndim - 1; d >= 0; --d) {
    if (t->shape[d] != 1 && t->strides[d] != expect) return false;
    expect *= t->shape[d];
  }
  return true;
}

void tensor_view(const gn_tensor* t, gn_tensor_view* v) {
  v->data = t->storage->data;
  v->device = t->storage->device;
  v->ndim = t->ndim;
  v->dtype = t->dtype;
  v->shape = t->shape;
  v->strides = t->strides;
  v->byte_offset = (uint64_t)(t->offset * (int64_t)elem_size(t->dtype));
}

std::string shape_string(int32_t ndim, const int64_t* shape) {
  std::string s = "(";
  for (int32_t d = 0; d < ndim; ++d) s += (d ? ", " : "") + std::to_string(shape[d]);
  return s + ")";
}

// Copy `bytes` between host and a device with the device's vtable, then wait.
static void copy_sync(gn_runtime* rt, gn_device dev, void* dst, const void* src, size_t bytes, int32_t kind) {
  if (!bytes) return;
  DeviceType& dt = rt->device_types[dev.type];
  void* stream = current_stream(rt, dev);
  throw_if(dt.vt->copy(dt.vt->ctx, dev.index, dst, src, bytes, kind, stream));
  if (dt.vt->stream_synchronize) throw_if(dt.vt->stream_synchronize(dt.vt->ctx, dev.index, stream));
}

static char* tensor_ptr(const gn_tensor* t) {
  return (char*)t->storage->data + t->offset * (int64_t)elem_size(t->dtype);
}

static void check_tensor(const gn_tensor* t, const char* fn, const char* name = "t") {
  if (!t) fail(GN_ERR_INVALID_ARGUMENT, std::string(fn) + ": " + name + " is NULL");
  check_live(t, kTensorMagic, fn, "tensor");
}

// f(), dropping t's reference if it throws (the exception then propagates).
template <class F>
static void released_on_throw(gn_tensor* t, F f) {
  try {
    f();
  } catch (...) {
    tensor_release(t);
    throw;
  }
}

}  // namespace genesis::core

using namespace genesis::core;

extern "C" {

gn_status* gn_tensor_empty(gn_runtime* rt, const int64_t* shape, int32_t ndim, int32_t dtype, gn_device dev,
                           gn_tensor** out) {
  return guarded([&] {
    require_non_null("gn_tensor_empty", {{"rt", rt}, {"out", out}});
    if (ndim > 0 && !shape)
      fail(GN_ERR_INVALID_ARGUMENT, "gn_tensor_empty: shape is NULL with ndim " + std::to_string(ndim));
    device_type_of(rt, dev, "gn_tensor_empty");
    *out = tensor_empty(rt, ndim, shape, dtype, dev, "gn_tensor_empty");
  });
}

gn_status* gn_tensor_from_host(gn_runtime* rt, const void* data, const int64_t* shape, int32_t ndim, int32_t dtype,
                               gn_device dev, gn_tensor** out) {
  return guarded([&] {
    require_non_null("gn_tensor_from_host", {{"rt", rt}, {"out", out}});
    if (ndim > 0 && !shape)
      fail(GN_ERR_INVALID_ARGUMENT, "gn_tensor_from_host: shape is NULL with ndim " + std::to_string(ndim));
    device_type_of(rt, dev, "gn_tensor_from_host");
    gn_tensor* t = tensor_empty(rt, ndim, shape, dtype, dev, "gn_tensor_from_host");
    size_t bytes = t->storage->bytes;
    if (bytes && !data) {
      tensor_release(t);
      fail(GN_ERR_INVALID_ARGUMENT, "gn_tensor_from_host: data is NULL");
    }
    released_on_throw(t, [&] { copy_sync(rt, dev, t->storage->data, data, bytes, GN_COPY_HOST_TO_DEVICE); });
    *out = t;
  });
}

gn_status* gn_tensor_scalar(gn_runtime* rt, double value, int32_t dtype, gn_device dev, gn_tensor** out) {
  return guarded([&] {
    require_non_null("gn_tensor_scalar", {{"rt", rt}, {"out", out}});
    device_type_of(rt, dev, "gn_tensor_scalar");
    alignas(8) unsigned char buf[8] = {};
    if (dtype < 0 || dtype >= GN_DTYPE_COUNT) fail(GN_ERR_DTYPE, "gn_tensor_scalar: invalid dtype");
    gn::sdk::store(buf, dtype, value);
    gn_tensor* t = tensor_empty(rt, 0, nullptr, dtype, dev);
    released_on_throw(t, [&] { copy_sync(rt, dev, t->storage->data, buf, elem_size(dtype), GN_COPY_HOST_TO_DEVICE); });
    t->flags |= GN_META_WRAPPED_SCALAR;
    *out = t;
  });
}

void gn_tensor_retain(gn_tensor* t) {
  check_live(t, kTensorMagic, "gn_tensor_retain", "tensor");
  if (t) t->refs.fetch_add(1, std::memory_order_relaxed);
}

void gn_tensor_release(gn_tensor* t) { tensor_release(t); }

gn_runtime* gn_tensor_runtime(const gn_tensor* t) { return t ? t->storage->rt : nullptr; }
int32_t gn_tensor_ndim(const gn_tensor* t) { return t ? t->ndim : 0; }
const int64_t* gn_tensor_shape(const gn_tensor* t) { return t ? t->shape : nullptr; }
const int64_t* gn_tensor_strides(const gn_tensor* t) { return t ? t->strides : nullptr; }
int64_t gn_tensor_storage_offset(const gn_tensor* t) { return t ? t->offset : 0; }
int32_t gn_tensor_dtype(const gn_tensor* t) { return t ? t->dtype : -1; }
gn_device gn_tensor_device(const gn_tensor* t) { return t ? t->storage->device : gn_device{-1, 0}; }
int64_t gn_tensor_numel(const gn_tensor* t) { return t ? tensor_numel(t) : 0; }
int32_t gn_tensor_is_contiguous(const gn_tensor* t) { return t ? tensor_is_contiguous(t) : 0; }
void* gn_tensor_data_ptr(const gn_tensor* t) { return t ? tensor_ptr(t) : nullptr; }
void gn_tensor_get_view(const gn_tensor* t, gn_tensor_view* out) {
  if (t && out) tensor_view(t, out);
}
int32_t gn_tensor_shares_storage(const gn_tensor* a, const gn_tensor* b) { return a && b && a->storage == b->storage; }
const void* gn_tensor_storage_id(const gn_tensor* t) { return t ? t->storage : nullptr; }
int32_t gn_tensor_is_exclusive(const gn_tensor* t) {
  return t && t->refs.load(std::memory_order_acquire) == 1 && t->storage &&
         t->storage->refs.load(std::memory_order_acquire) == 1 && !t->storage->dlpack;
}

gn_status* gn_tensor_to_host(const gn_tensor* t, void* dst, size_t bytes) {
  return guarded([&] {
    check_tensor(t, "gn_tensor_to_host");
    if (bytes && !dst)
      fail(GN_ERR_INVALID_ARGUMENT, "gn_tensor_to_host: dst is NULL with bytes " + std::to_string(bytes));
    size_t need = (size_t)tensor_numel(t) * elem_size(t->dtype);
    if (bytes != need)
      fail(GN_ERR_INVALID_ARGUMENT, "gn_tensor_to_host: buffer is " + std::to_string(bytes) + " bytes, tensor " +
                                        shape_string(t->ndim, t->shape) + " " + gn_dtype_name(t->dtype) + " needs " +
                                        std::to_string(need));
    if (!need) return;
    if (!dst) fail(GN_ERR_INVALID_ARGUMENT, "gn_tensor_to_host: dst is NULL");
    gn_tensor* c = make_contiguous(const_cast<gn_tensor*>(t));
    released_on_throw(
        c, [&] { copy_sync(c->storage->rt, c->storage->device, dst, tensor_ptr(c), need, GN_COPY_DEVICE_TO_HOST); });
    tensor_release(c);
  });
}

gn_status* gn_tensor_to_device(gn_tensor* t, gn_device dev, gn_tensor** out) {
  return guarded([&] {
    check_tensor(t, "gn_tensor_to_device");
    require_non_null("gn_tensor_to_device", {{"out", out}});
    gn_runtime* rt = t->storage->rt;
    device_type_of(rt, dev, "gn_tensor_to_device");
    gn_device src = t->storage->device;
    if (src.type == dev.type && src.index == dev.index) {
      gn_tensor_retain(t);
      *out = t;
      return;
    }
    gn_tensor* c = make_contiguous(t);
    size_t bytes = (size_t)tensor_numel(c) * elem_size(c->dtype);
    gn_tensor* r = nullptr;
    try {
      r = tensor_empty(rt, c->ndim, c->shape, c->dtype, dev);
      const DeviceType& sdt = rt->device_types[src.type];
      const DeviceType& ddt = rt->device_types[dev.type];
      bool src_host = sdt.vt->flags & GN_DEVICE_HOST_MEMORY, dst_host = ddt.vt->flags & GN_DEVICE_HOST_MEMORY;
      if (src_host) {
        copy_sync(rt, dev, r->storage->data, tensor_ptr(c), bytes, GN_COPY_HOST_TO_DEVICE);
      } else if (dst_host) {
        copy_sync(rt, src, tensor_ptr(r), tensor_ptr(c), bytes, GN_COPY_DEVICE_TO_HOST);
      } else if (src.type == dev.type) {
        copy_sync(rt, dev, r->storage->data, tensor_ptr(c), bytes, GN_COPY_DEVICE_TO_DEVICE);
      } else {  // two different accelerators: stage through host memory
        std::vector<char> staging(bytes);
        copy_sync(rt, src, staging.data(), tensor_ptr(c), bytes, GN_COPY_DEVICE_TO_HOST);
        copy_sync(rt, dev, r->storage->data, staging.data(), bytes, GN_COPY_HOST_TO_DEVICE);
      }
    } catch (...) {
      tensor_release(c);
      tensor_release(r);
      throw;
    }
    tensor_release(c);
    *out = r;
  });
}

gn_status* gn_tensor_to_dtype(gn_tensor* t, int32_t dtype, gn_tensor** out) {
  return guarded([&] {
    check_tensor(t, "gn_tensor_to_dtype");
    require_non_null("gn_tensor_to_dtype", {{"out", out}});
    if (t->dtype == dtype) {
      gn_tensor_retain(t);
      *out = t;
      return;
    }
    *out = cast_to(t, dtype);
  });
}

gn_status* gn_tensor_contiguous(gn_tensor* t, gn_tensor** out) {
  return guarded([&] {
    check_tensor(t, "gn_tensor_contiguous");
    require_non_null("gn_tensor_contiguous", {{"out", out}});
    *out = make_contiguous(t);
  });
}

gn_status* gn_tensor_copy_(gn_tensor* dst, gn_tensor* src) {
  return guarded([&] {
    check_tensor(dst, "gn_tensor_copy_", "dst");
    check_tensor(src, "gn_tensor_copy_", "src");
    gn_tensor* outs[1] = {dst};
    op_call(dst->storage->rt, dst->storage->rt->op_copy, &src, 1, nullptr, 0, outs, 1, nullptr);
  });
}

}  // extern "C"

// core/src/dlpack.cpp - zero-copy exchange with other frameworks through
// DLManagedTensorVersioned (DLPack 1.x).
#include <cstring>

#include "runtime.h"

namespace genesis::core {
namespace {

bool to_dl_dtype(int32_t dtype, DLDataType* out) {
  switch (dtype) {
    case GN_F32: *out = {kDLFloat, 32, 1}; return true;
    case GN_F16: *out = {kDLFloat, 16, 1}; return true;
    case GN_BF16: *out = {kDLBfloat, 16, 1}; return true;
    case GN_F64: *out = {kDLFloat, 64, 1}; return true;
    case GN_I8: *out = {kDLInt, 8, 1}; return true;
    case GN_U8: *out = {kDLUInt, 8, 1}; return true;
    case GN_I32: *out = {kDLInt, 32, 1}; return true;
    case GN_I64: *out = {kDLInt, 64, 1}; return true;
    case GN_BOOL: *out = {kDLBool, 8, 1}; return true;
    default: return false;
  }
}

int32_t from_dl_dtype(DLDataType t) {
  if (t.lanes != 1) return -1;
  switch (t.code) {
    case kDLFloat: return t.bits == 32 ? GN_F32 : t.bits == 16 ? GN_F16 : t.bits == 64 ? GN_F64 : -1;
    case kDLBfloat: return t.bits == 16 ? GN_BF16 : -1;
    case kDLInt: return t.bits == 8 ? GN_I8 : t.bits == 32 ? GN_I32 : t.bits == 64 ? GN_I64 : -1;
    case kDLUInt: return t.bits == 8 ? GN_U8 : -1;
    case kDLBool: return t.bits == 8 ? GN_BOOL : -1;
    default: return -1;
  }
}

// Device-type names that DLPack knows.
int32_t dl_device_type(const std::string& name) {
  if (name == "cpu") return kDLCPU;
  if (name == "cuda") return kDLCUDA;
  return -1;
}

void export_deleter(DLManagedTensorVersioned* self) {
  if (!self) return;
  tensor_release(static_cast<gn_tensor*>(self->manager_ctx));
  delete self;
}

}  // namespace
}  // namespace genesis::core

using namespace genesis::core;

extern "C" {

gn_status* gn_tensor_to_dlpack(gn_tensor* t, DLManagedTensorVersioned** out) {
  return guarded([&] {
    require_non_null("gn_tensor_to_dlpack", {{"t", t}, {"out", out}});
    gn_runtime* rt = t->storage->rt;
    const std::string& type = rt->device_types[t->storage->device.type].name;
    int32_t dl_dev = dl_device_type(type);
    if (dl_dev < 0) fail(GN_ERR_UNSUPPORTED, "gn_tensor_to_dlpack: device type '" + type + "' has no DLPack code");
    auto* m = new DLManagedTensorVersioned{};
    m->version = {DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION};
    m->manager_ctx = t;
    m->deleter = export_deleter;
    m->flags = 0;
    to_dl_dtype(t->dtype, &m->dl_tensor.dtype);
    m->dl_tensor.data = t->storage->data;
    m->dl_tensor.byte_offset = (uint64_t)(t->offset * (int64_t)elem_size(t->dtype));
    m->dl_tensor.device = {(DLDeviceType)dl_dev, t->storage->device.index};
    m->dl_tensor.ndim = t->ndim;
    m->dl_tensor.shape = t->shape;  // the retained handle owns these arrays
    m->dl_tensor.strides = t->strides;
    t->refs.fetch_add(1, std::memory_order_relaxed);
    *out = m;
  });
}

gn_status* gn_tensor_from_dlpack(gn_runtime* rt, DLManagedTensorVersioned* src, gn_tensor** out) {
  auto drop = [&] {
    if (src && src->deleter) src->deleter(src);
  };
  gn_status* st = guarded([&] {
    require_non_null("gn_tensor_from_dlpack", {{"rt", rt}, {"src", src}, {"out", out}});
    if (src->version.major != DLPACK_MAJOR_VERSION)
      fail(GN_ERR_VERSION, "gn_tensor_from_dlpack: DLPack major " + std::to_string(src->version.major) +
                               ", this build understands " + std::to_string(DLPACK_MAJOR_VERSION));
    const DLTensor& dl = src->dl_tensor;
    int32_t dtype = from_dl_dtype(dl.dtype);
    if (dtype < 0)
      fail(GN_ERR_DTYPE, "gn_tensor_from_dlpack: unsupported DLPack dtype (code " + std::to_string(dl.dtype.code) +
                             ", bits " + std::to_string(dl.dtype.bits) + ", lanes " + std::to_string(dl.dtype.lanes) +
                             ")");
    if (dl.ndim < 0 || dl.ndim > GN_MAX_DIMS)
      fail(GN_ERR_SHAPE, "gn_tensor_from_dlpack: rank " + std::to_string(dl.ndim));
    int type = -1;
    for (size_t i = 0; i < rt->device_types.size(); ++i)
      if (dl_device_type(rt->device_types[i].name) == (int32_t)dl.device.device_type) type = (int)i;
    if (type < 0)
      fail(GN_ERR_DEVICE,
           "gn_tensor_from_dlpack: no device type for DLPack device " + std::to_string((int)dl.device.device_type));
    gn_device dev{type, dl.device.device_id};
    device_type_of(rt, dev, "gn_tensor_from_dlpack");
    if (dl.ndim > 0 && !dl.shape)
      fail(GN_ERR_INVALID_ARGUMENT, "gn_tensor_from_dlpack: shape is NULL with ndim " + std::to_string(dl.ndim));
    size_t es = elem_size(dtype);
    // Also rejects negative sizes.
    checked_numel(dl.ndim, dl.shape, es, "gn_tensor_from_dlpack");
    int64_t strides[GN_MAX_DIMS];
    if (dl.strides)
      std::memcpy(strides, dl.strides, sizeof(int64_t) * (size_t)dl.ndim);
    else
      contiguous_strides(dl.ndim, dl.shape, strides);
    // Extent in elements, to give the storage a size (views are bounds-checked against it).
    int64_t extent = 1;
    bool empty = false;
    for (int32_t d = 0; d < dl.ndim; ++d) {
      if (strides[d] < 0)
        fail(GN_ERR_INVALID_ARGUMENT,
             "gn_tensor_from_dlpack: negative stride " + std::to_string(strides[d]) + " in dim " + std::to_string(d));
      if (dl.shape[d] == 0) empty = true;
    }
    for (int32_t d = 0; d < dl.ndim && !empty; ++d) {
      int64_t reach = 0;
      if (__builtin_mul_overflow(dl.shape[d] - 1, strides[d], &reach) ||
          __builtin_add_overflow(extent, reach, &extent) || __builtin_mul_overflow(extent, (int64_t)es, &reach))
        fail(GN_ERR_INVALID_ARGUMENT, "gn_tensor_from_dlpack: shape " + shape_string(dl.ndim, dl.shape) +
                                          " with strides " + shape_string(dl.ndim, strides) + " overflows");
    }
    if (dl.byte_offset % es)
      fail(GN_ERR_INVALID_ARGUMENT, "gn_tensor_from_dlpack: byte_offset not a multiple of the element size");
    auto* s = new Storage;
    s->rt = rt;
    s->device = dev;
    s->data = dl.data;
    s->bytes = dl.byte_offset + (empty ? 0 : (size_t)extent * es);
    s->dlpack = src;
    runtime_retain(rt);
    *out = tensor_new(s, dtype, dl.ndim, dl.shape, strides, (int64_t)(dl.byte_offset / es));
  });
  if (st) drop();
  return st;
}

}  // extern "C"

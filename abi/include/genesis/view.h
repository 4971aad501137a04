/* genesis/view.h - how tensors cross the boundary.
 *
 * gn_tensor_view is laid out after DLPack's DLTensor: a borrowed view that
 * lives for the duration of one call.  Strides are in elements (never NULL
 * here).  gn_tensor_meta is the fixed-size shape/dtype record that shape
 * inference reads and writes.  Both are value types frozen for the major.
 */
#ifndef GENESIS_VIEW_H
#define GENESIS_VIEW_H

#include "genesis/device.h"
#include "genesis/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A strided view of device memory: element (i0..in) lives at
 * (char*)data + byte_offset + sum(ik * strides[k]) * dtype_size. */
typedef struct gn_tensor_view {
  void* data;
  gn_device device;
  int32_t ndim;
  int32_t dtype;          /* gn_dtype */
  const int64_t* shape;   /* ndim entries */
  const int64_t* strides; /* ndim entries, in elements */
  uint64_t byte_offset;
} gn_tensor_view;

/* gn_tensor_meta.flags */
#define GN_META_WRAPPED_SCALAR 0x1u /* a number from the caller (a "Python scalar"): lowest promotion priority */

/* Shape and dtype without data: the currency of shape inference. */
typedef struct gn_tensor_meta {
  int32_t dtype;
  int32_t ndim;
  int64_t shape[GN_MAX_DIMS];
  uint32_t flags; /* GN_META_* */
  uint32_t reserved;
} gn_tensor_meta;

/* Number of elements of a view (1 for a 0-d view). */
static inline int64_t gn_view_numel(const gn_tensor_view* v) {
  int64_t n = 1;
  for (int32_t i = 0; i < v->ndim; ++i) n *= v->shape[i];
  return n;
}

/* 1 when the view is dense row-major (size-1 dims may have any stride). */
static inline int gn_view_is_contiguous(const gn_tensor_view* v) {
  int64_t expect = 1;
  for (int32_t i = v->ndim - 1; i >= 0; --i) {
    if (v->shape[i] != 1 && v->strides[i] != expect) return 0;
    expect *= v->shape[i];
  }
  return 1;
}

/* Strides that address v with the index of a rank-`ndim` tensor of `shape`
 * that v broadcasts to (trailing dims align; size-1 and missing dims get
 * stride 0).  Kernels receive their inputs with their own shapes, not
 * broadcast: this maps an output index to an input element.  Returns 1, or 0
 * (out_strides partly written) when v does not broadcast to shape. */
static inline int gn_view_broadcast_strides(const gn_tensor_view* v, int32_t ndim, const int64_t* shape,
                                            int64_t* out_strides) {
  int32_t d;
  if (v->ndim > ndim) return 0;
  for (d = 0; d < ndim; ++d) {
    const int32_t vd = d - (ndim - v->ndim);
    if (vd < 0 || v->shape[vd] == 1)
      out_strides[d] = 0;
    else if (v->shape[vd] == shape[d])
      out_strides[d] = v->strides[vd];
    else
      return 0;
  }
  return 1;
}

/* Address of the first element. */
static inline void* gn_view_ptr(const gn_tensor_view* v) { return (char*)v->data + v->byte_offset; }

#ifdef __cplusplus
}
#endif

#endif /* GENESIS_VIEW_H */

/* genesis/tensor.h - public C API: tensors and zero-copy views.
 *
 * A gn_tensor is a reference-counted handle to (storage, byte offset, shape,
 * strides in elements, dtype, device).  Views share storage.  New handles
 * start with one reference; release each with gn_tensor_release. */
#ifndef GENESIS_TENSOR_H
#define GENESIS_TENSOR_H

#include "genesis/dlpack.h"
#include "genesis/runtime.h"
#include "genesis/view.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gn_tensor gn_tensor;

/* ------------------------------------------------------------- lifetime */

/* Uninitialised contiguous tensor. */
GN_API gn_status* gn_tensor_empty(gn_runtime* rt, const int64_t* shape, int32_t ndim, int32_t dtype, gn_device dev,
                                  gn_tensor** out);
/* Contiguous tensor holding a copy of `data` (host memory, row-major, numel*elsize bytes). */
GN_API gn_status* gn_tensor_from_host(gn_runtime* rt, const void* data, const int64_t* shape, int32_t ndim,
                                      int32_t dtype, gn_device dev, gn_tensor** out);
/* 0-d tensor holding `value` converted to dtype; marked as a wrapped scalar
 * (it does not raise the result dtype of binary ops, as a Python number). */
GN_API gn_status* gn_tensor_scalar(gn_runtime* rt, double value, int32_t dtype, gn_device dev, gn_tensor** out);
/* Add a reference. */
GN_API void gn_tensor_retain(gn_tensor* t);
/* Drop a reference (NULL is fine); storage is freed with its last view. */
GN_API void gn_tensor_release(gn_tensor* t);

/* ------------------------------------------------------------- metadata */

/* Runtime the tensor belongs to. */
GN_API gn_runtime* gn_tensor_runtime(const gn_tensor* t);
/* Rank. */
GN_API int32_t gn_tensor_ndim(const gn_tensor* t);
/* Shape (ndim entries, valid while t lives). */
GN_API const int64_t* gn_tensor_shape(const gn_tensor* t);
/* Strides in elements. */
GN_API const int64_t* gn_tensor_strides(const gn_tensor* t);
/* Offset of the first element from the storage start, in elements. */
GN_API int64_t gn_tensor_storage_offset(const gn_tensor* t);
/* gn_dtype. */
GN_API int32_t gn_tensor_dtype(const gn_tensor* t);
/* Device. */
GN_API gn_device gn_tensor_device(const gn_tensor* t);
/* Number of elements. */
GN_API int64_t gn_tensor_numel(const gn_tensor* t);
/* 1 when dense row-major. */
GN_API int32_t gn_tensor_is_contiguous(const gn_tensor* t);
/* Address of the first element (device pointer for device tensors). */
GN_API void* gn_tensor_data_ptr(const gn_tensor* t);
/* The tensor as a borrowed view (valid while t lives and is not reshaped). */
GN_API void gn_tensor_get_view(const gn_tensor* t, gn_tensor_view* out);
/* 1 if both tensors share a storage. */
GN_API int32_t gn_tensor_shares_storage(const gn_tensor* a, const gn_tensor* b);
/* Identity of the storage (for aliasing checks / version counters). */
GN_API const void* gn_tensor_storage_id(const gn_tensor* t);
/* 1 if t holds the only reference to its handle and to its storage (no other
 * handle, view or DLPack import can reach the data), so the caller may take the
 * data over instead of copying it; 0 otherwise.  (Added after 1.1, C API only.) */
GN_API int32_t gn_tensor_is_exclusive(const gn_tensor* t);

/* ------------------------------------------------------------ data moves */

/* Copy all elements into host memory `dst` (row-major, `bytes` must be numel*elsize). */
GN_API gn_status* gn_tensor_to_host(const gn_tensor* t, void* dst, size_t bytes);
/* Copy to another device (same dtype, contiguous result; a retain when already there). */
GN_API gn_status* gn_tensor_to_device(gn_tensor* t, gn_device dev, gn_tensor** out);
/* Copy with dtype conversion (a retain when dtype matches). */
GN_API gn_status* gn_tensor_to_dtype(gn_tensor* t, int32_t dtype, gn_tensor** out);
/* Dense copy (a retain when already contiguous). */
GN_API gn_status* gn_tensor_contiguous(gn_tensor* t, gn_tensor** out);
/* dst[...] = src, broadcasting src and converting dtype; devices must match. */
GN_API gn_status* gn_tensor_copy_(gn_tensor* dst, gn_tensor* src);

/* ----------------------------------------------------------------- views */

/* View with a new shape (one -1 allowed); fails if strides do not allow it. */
GN_API gn_status* gn_tensor_view_as(gn_tensor* t, const int64_t* shape, int32_t ndim, gn_tensor** out);
/* Like view, but copies when a view is impossible. */
GN_API gn_status* gn_tensor_reshape(gn_tensor* t, const int64_t* shape, int32_t ndim, gn_tensor** out);
/* Reorder dims (negative dims allowed). */
GN_API gn_status* gn_tensor_permute(gn_tensor* t, const int64_t* dims, int32_t ndim, gn_tensor** out);
/* Swap two dims. */
GN_API gn_status* gn_tensor_transpose(gn_tensor* t, int64_t dim0, int64_t dim1, gn_tensor** out);
/* Python-style slice start:stop:step on one dim (step >= 1; bounds clamped). */
GN_API gn_status* gn_tensor_slice(gn_tensor* t, int64_t dim, int64_t start, int64_t stop, int64_t step,
                                  gn_tensor** out);
/* Pick index along dim, removing it. */
GN_API gn_status* gn_tensor_select(gn_tensor* t, int64_t dim, int64_t index, gn_tensor** out);
/* Broadcast size-1 dims to shape (-1 keeps a size; new leading dims allowed). */
GN_API gn_status* gn_tensor_expand(gn_tensor* t, const int64_t* shape, int32_t ndim, gn_tensor** out);
/* Remove size-1 dim `dim` (GN_DIM_NONE: all size-1 dims). */
GN_API gn_status* gn_tensor_squeeze(gn_tensor* t, int64_t dim, gn_tensor** out);
/* Insert a size-1 dim at dim (negative counts from the end of the result). */
GN_API gn_status* gn_tensor_unsqueeze(gn_tensor* t, int64_t dim, gn_tensor** out);
/* Arbitrary strided view over the same storage (bounds-checked). */
GN_API gn_status* gn_tensor_as_strided(gn_tensor* t, const int64_t* shape, const int64_t* strides, int32_t ndim,
                                       int64_t storage_offset, gn_tensor** out);
/* Flatten dims start..end into one (a view when possible). */
GN_API gn_status* gn_tensor_flatten(gn_tensor* t, int64_t start_dim, int64_t end_dim, gn_tensor** out);

/* ---------------------------------------------------------------- DLPack */

/* Export as DLPack (zero-copy; the tensor stays alive until the deleter runs). */
GN_API gn_status* gn_tensor_to_dlpack(gn_tensor* t, DLManagedTensorVersioned** out);
/* Import a DLPack tensor (zero-copy; its deleter runs when the storage dies,
 * or at once if import fails). */
GN_API gn_status* gn_tensor_from_dlpack(gn_runtime* rt, DLManagedTensorVersioned* src, gn_tensor** out);

#ifdef __cplusplus
}
#endif

#endif /* GENESIS_TENSOR_H */

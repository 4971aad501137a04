// backends/cuda/ops/indexing.cuh - the gather / scatter geometry shared by indexing.cu
// (gather, scatter, scatter_add) and scatter.cu (scatter_reduce).
#pragma once

#include <string>

#include "common.cuh"
#include "kernels/nn_common/nn_common.cuh"

namespace gn::cuda::indexing {

// gather / scatter geometry: coordinates of an element of index (shape ishape)
// give the offset into a dense target (strides tstride) with coordinate `dim`
// replaced by the index value, and the offset into src (strides sstride).

struct DimGeom {
  int ndim = 0, dim = 0;
  int64_t ishape[GN_MAX_DIMS] = {};
  int64_t tstride[GN_MAX_DIMS] = {};
  int64_t sstride[GN_MAX_DIMS] = {};
  int64_t dim_size = 1;

  // Offset in the target without dim's contribution, and the src offset.
  __device__ __forceinline__ void offsets(int64_t i, int64_t& t, int64_t& s) const {
    t = 0;
    s = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t c = i % ishape[d];
      i /= ishape[d];
      s += c * sstride[d];
      if (d != dim) t += c * tstride[d];
    }
  }
  // idx[i] when it lies in [0, dim_size); else -1, the value reported through bad.
  __device__ __forceinline__ int64_t checked_index(const nn::IndexPtr& idx, int64_t i, const nn::BadIndex& bad) const {
    const int64_t v = idx[i];
    if (v < 0 || v >= dim_size) {
      bad.report(v);
      return -1;
    }
    return v;
  }
  // Target offset of index element i whose value is v (in [0, dim_size)), and the src offset.
  __device__ __forceinline__ void target_offsets(int64_t i, int64_t v, int64_t& t, int64_t& s) const {
    offsets(i, t, s);
    if (dim >= 0) t += v * tstride[dim];
  }
};

// Dense row-major strides of a view's shape.
inline void dense_strides(const gn_tensor_view& v, int64_t* out) {
  int64_t acc = 1;
  for (int d = v.ndim - 1; d >= 0; --d) {
    out[d] = acc;
    acc *= v.shape[d] > 0 ? v.shape[d] : 1;
  }
}

// Geometry for gather/scatter: index of x's rank (or any 1-element index of a
// 0-d target), index.shape[d] <= target.shape[d] for d != dim.
inline DimGeom dim_geom(const char* op, const gn_tensor_view& target, const gn_tensor_view& index, int32_t dim,
                        const gn_tensor_view* src) {
  DimGeom g;
  if (target.ndim == 0) {
    if (numel(index) > 1) fail_op(GN_ERR_SHAPE, op, "index " + shape_str(index) + " is too large for a 0-d input");
    g.ndim = index.ndim;
    for (int d = 0; d < index.ndim; ++d) g.ishape[d] = index.shape[d];
    g.dim = -1;
    g.dim_size = 1;
    return g;
  }
  bool ok = index.ndim == target.ndim;
  for (int32_t d = 0; ok && d < target.ndim; ++d) ok = d == dim || index.shape[d] <= target.shape[d];
  if (!ok)
    fail_op(
        GN_ERR_SHAPE, op,
        "index " + shape_str(index) + " does not fit input " + shape_str(target) + " at dim " + std::to_string(dim));
  g.ndim = index.ndim;
  g.dim = dim;
  g.dim_size = target.shape[dim];
  for (int d = 0; d < index.ndim; ++d) g.ishape[d] = index.shape[d];
  dense_strides(target, g.tstride);
  if (src && src->ndim > 0) {
    bool sok = src->ndim == index.ndim;
    for (int32_t d = 0; sok && d < src->ndim; ++d) sok = index.shape[d] <= src->shape[d];
    if (!sok) fail_op(GN_ERR_SHAPE, op, "src " + shape_str(*src) + " is smaller than index " + shape_str(index));
    dense_strides(*src, g.sstride);
  }
  return g;
}

}  // namespace gn::cuda::indexing

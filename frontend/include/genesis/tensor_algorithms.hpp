// genesis/tensor_algorithms.hpp - tensor ops that scan, order, count or search, with torch's
// names and semantics: cumsum, cumprod, logcumsumexp, cummax, cummin, kthvalue, median,
// nanmedian, mode, unique, unique_consecutive, bincount, histc, searchsorted, bucketize and
// scatter_reduce.
//
// cumsum, cumprod, logcumsumexp, cummax/cummin, searchsorted and scatter_reduce are ops of
// core/ops/ops.def; the others are composed here from sort, gather and friends, so they run on
// every device.  sort is stable, so ties resolve to the lowest index where torch leaves the
// choice open (kthvalue, median), and mode returns the last index of its value, as torch does.
// Gradients: cumsum, cumprod (zeros included), logcumsumexp, cummax/cummin, the values of
// kthvalue, median, nanmedian and mode (to the returned index; median() and nanmedian() over
// everything split it evenly among equal elements, as torch), scatter_reduce (sum, mean, amax,
// amin, prod as torch).  unique, bincount, histc and
// the searches return no gradient.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "genesis/tensor.hpp"

namespace genesis {

/** Running sum along dim (torch.cumsum); bool and integer inputs sum in int64 unless dtype. */
Tensor cumsum(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);
/** Running product along dim (torch.cumprod); dtypes as cumsum. */
Tensor cumprod(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);
/** log(cumsum(exp(x))) along dim, computed stably (floating x). */
Tensor logcumsumexp(const Tensor& x, int64_t dim);
/** (values, int64 indices) of the running maximum along dim; ties take the later index. */
std::pair<Tensor, Tensor> cummax(const Tensor& x, int64_t dim);
/** (values, int64 indices) of the running minimum along dim. */
std::pair<Tensor, Tensor> cummin(const Tensor& x, int64_t dim);

/** (values, int64 indices) of the k-th smallest element (k from 1) along dim. */
std::pair<Tensor, Tensor> kthvalue(const Tensor& x, int64_t k, int64_t dim = -1, bool keepdim = false);
/** The lower median of all elements (nan if any is nan). */
Tensor median(const Tensor& x);
/** (values, int64 indices) of the lower median along dim; a line with a nan gives nan and the
 * index of its first nan. */
std::pair<Tensor, Tensor> median(const Tensor& x, int64_t dim, bool keepdim = false);
/** The lower median of the elements that are not nan (nan if all are). */
Tensor nanmedian(const Tensor& x);
/** (values, int64 indices) of the lower median along dim, nans left out. */
std::pair<Tensor, Tensor> nanmedian(const Tensor& x, int64_t dim, bool keepdim = false);
/** (values, int64 indices) of the most frequent value along dim (the smallest on ties) and the
 * last index where it occurs. */
std::pair<Tensor, Tensor> mode(const Tensor& x, int64_t dim = -1, bool keepdim = false);

/** What unique and unique_consecutive return; inverse and counts are set when asked for. */
struct UniqueResult {
  Tensor values;   ///< 1-D, x's dtype
  Tensor inverse;  ///< int64, x's shape: the position of each element in values
  Tensor counts;   ///< int64, values' length
};
/** The distinct values of x, sorted (sorted = false returns them sorted too, which torch allows),
 * over the flattened tensor. */
UniqueResult unique(const Tensor& x, bool sorted = true, bool return_inverse = false, bool return_counts = false);
/** The flattened x with every run of equal consecutive values collapsed to one. */
UniqueResult unique_consecutive(const Tensor& x, bool return_inverse = false, bool return_counts = false);
/** Counts (or summed weights) of each value 0..max(x) of a 1-D non-negative integer tensor, at
 * least minlength long: int64 without weights, float32 with float32 weights, else float64. */
Tensor bincount(const Tensor& x, const Tensor& weights = Tensor(), int64_t minlength = 0);
/** Histogram of x with `bins` equal bins over [min, max] (min == max: x's own range); elements
 * outside are ignored, and so are nans (torch 1.13's CPU kernel counts them in the first bin);
 * x's dtype (floating). */
Tensor histc(const Tensor& x, int64_t bins = 100, double min = 0, double max = 0);
/** Indices where values would be inserted into the last dim of sorted_sequence to keep it sorted
 * (right: after equal elements); sorter: the argsort of an unsorted sequence. */
Tensor searchsorted(const Tensor& sorted_sequence, const Tensor& values, bool right = false, bool out_int32 = false,
                    const Tensor& sorter = Tensor());
/** The bucket of each element of x among 1-D sorted boundaries (torch.bucketize). */
Tensor bucketize(const Tensor& x, const Tensor& boundaries, bool right = false, bool out_int32 = false);
/** Copy of x with src reduced into it at index along dim: reduce "sum", "prod", "mean", "amax"
 * or "amin"; include_self false leaves x's values out where something is scattered. */
Tensor scatter_reduce(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce,
                      bool include_self = true);

}  // namespace genesis

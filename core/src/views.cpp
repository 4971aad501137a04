// core/src/views.cpp - zero-copy views: reshape/view, permute, transpose,
// slice with step, select, expand, squeeze/unsqueeze, as_strided, flatten.
#include <algorithm>

#include "runtime.h"

namespace genesis::core {
namespace {

int64_t wrap(int64_t dim, int32_t ndim, const char* fn) {
  int32_t n = ndim > 0 ? ndim : 1;
  if (dim < -n || dim >= n)
    fail(GN_ERR_INDEX, std::string(fn) + ": dim " + std::to_string(dim) + " is out of range for a tensor of rank " +
                           std::to_string(ndim));
  return dim < 0 ? dim + n : dim;
}

gn_tensor* view_of(gn_tensor* t, int32_t ndim, const int64_t* shape, const int64_t* strides, int64_t offset) {
  check_live(t, kTensorMagic, "view", "tensor");
  if (ndim > GN_MAX_DIMS) fail(GN_ERR_SHAPE, "view rank exceeds " + std::to_string(GN_MAX_DIMS));
  t->storage->refs.fetch_add(1, std::memory_order_relaxed);
  return tensor_new(t->storage, t->dtype, ndim, shape, strides, offset);
}

// Resolve one -1 in a requested shape against numel.
void infer_shape(const gn_tensor* t, const int64_t* shape, int32_t ndim, int64_t* out, const char* fn) {
  if (ndim < 0 || ndim > GN_MAX_DIMS) fail(GN_ERR_SHAPE, std::string(fn) + ": bad rank " + std::to_string(ndim));
  if (ndim > 0 && !shape)
    fail(GN_ERR_INVALID_ARGUMENT, std::string(fn) + ": shape is NULL with ndim " + std::to_string(ndim));
  int64_t numel = tensor_numel(t), known = 1;
  int infer_at = -1;
  for (int32_t d = 0; d < ndim; ++d) {
    if (shape[d] == -1) {
      if (infer_at >= 0) fail(GN_ERR_SHAPE, std::string(fn) + ": only one dimension can be -1");
      infer_at = d;
    } else if (shape[d] < 0) {
      fail(GN_ERR_SHAPE, std::string(fn) + ": invalid size " + std::to_string(shape[d]));
    } else if (__builtin_mul_overflow(known, shape[d], &known)) {
      fail(GN_ERR_INVALID_ARGUMENT,
           std::string(fn) + ": shape " + shape_string(ndim, shape) + " is too large (size overflows)");
    }
    out[d] = shape[d];
  }
  if (infer_at >= 0) {
    if (known == 0 || numel % known)
      fail(GN_ERR_SHAPE, std::string(fn) + ": shape " + shape_string(ndim, shape) + " is invalid for " +
                             std::to_string(numel) + " elements");
    out[infer_at] = numel / known;
  } else if (known != numel) {
    fail(GN_ERR_SHAPE, std::string(fn) + ": shape " + shape_string(ndim, shape) + " is invalid for " +
                           std::to_string(numel) + " elements " + shape_string(t->ndim, t->shape));
  }
  checked_numel(ndim, out, elem_size(t->dtype), fn);
}

// Strides for viewing t with new_shape without copying (PyTorch's
// computeStride); false when impossible.
bool view_strides(const gn_tensor* t, const int64_t* new_shape, int32_t new_ndim, int64_t* new_strides) {
  if (tensor_numel(t) == 0 || t->ndim == 0) {
    contiguous_strides(new_ndim, new_shape, new_strides);
    return true;
  }
  int64_t view_d = new_ndim - 1;
  int64_t chunk_base_stride = t->strides[t->ndim - 1];
  int64_t tensor_numel_chunk = 1, view_numel = 1;
  for (int64_t d = t->ndim - 1; d >= 0; --d) {
    tensor_numel_chunk *= t->shape[d];
    if (d == 0 || (t->shape[d - 1] != 1 && t->strides[d - 1] != tensor_numel_chunk * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel_chunk || new_shape[view_d] == 1)) {
        new_strides[view_d] = view_numel * chunk_base_stride;
        view_numel *= new_shape[view_d];
        view_d--;
      }
      if (view_numel != tensor_numel_chunk) return false;
      if (d > 0) {
        chunk_base_stride = t->strides[d - 1];
        tensor_numel_chunk = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

template <class F>
gn_status* view_entry(gn_tensor* t, gn_tensor** out, const char* fn, F&& f) {
  return guarded([&] {
    require_non_null(fn, {{"t", t}, {"out", out}});
    *out = f();
  });
}

}  // namespace
}  // namespace genesis::core

using namespace genesis::core;

extern "C" {

gn_status* gn_tensor_view_as(gn_tensor* t, const int64_t* shape, int32_t ndim, gn_tensor** out) {
  return view_entry(t, out, "view", [&] {
    int64_t s[GN_MAX_DIMS], st[GN_MAX_DIMS];
    infer_shape(t, shape, ndim, s, "view");
    if (!view_strides(t, s, ndim, st))
      fail(GN_ERR_SHAPE, "view: shape " + shape_string(ndim, s) + " is incompatible with the strides of " +
                             shape_string(t->ndim, t->shape) + "; use reshape (copies)");
    return view_of(t, ndim, s, st, t->offset);
  });
}

gn_status* gn_tensor_reshape(gn_tensor* t, const int64_t* shape, int32_t ndim, gn_tensor** out) {
  return view_entry(t, out, "reshape", [&] {
    int64_t s[GN_MAX_DIMS], st[GN_MAX_DIMS];
    infer_shape(t, shape, ndim, s, "reshape");
    if (view_strides(t, s, ndim, st)) return view_of(t, ndim, s, st, t->offset);
    gn_tensor* c = make_contiguous(t);
    contiguous_strides(ndim, s, st);
    gn_tensor* r = view_of(c, ndim, s, st, c->offset);
    tensor_release(c);
    return r;
  });
}

gn_status* gn_tensor_permute(gn_tensor* t, const int64_t* dims, int32_t ndim, gn_tensor** out) {
  return view_entry(t, out, "permute", [&] {
    if (ndim > 0 && !dims) fail(GN_ERR_INVALID_ARGUMENT, "permute: dims is NULL with ndim " + std::to_string(ndim));
    if (ndim != t->ndim)
      fail(GN_ERR_SHAPE,
           "permute: got " + std::to_string(ndim) + " dims for a tensor of rank " + std::to_string(t->ndim));
    int64_t s[GN_MAX_DIMS], st[GN_MAX_DIMS];
    bool used[GN_MAX_DIMS] = {};
    for (int32_t i = 0; i < ndim; ++i) {
      int64_t d = wrap(dims[i], t->ndim, "permute");
      if (used[d]) fail(GN_ERR_SHAPE, "permute: dim " + std::to_string(d) + " repeated");
      used[d] = true;
      s[i] = t->shape[d];
      st[i] = t->strides[d];
    }
    return view_of(t, ndim, s, st, t->offset);
  });
}

gn_status* gn_tensor_transpose(gn_tensor* t, int64_t dim0, int64_t dim1, gn_tensor** out) {
  return view_entry(t, out, "transpose", [&] {
    int64_t s[GN_MAX_DIMS], st[GN_MAX_DIMS];
    std::copy(t->shape, t->shape + t->ndim, s);
    std::copy(t->strides, t->strides + t->ndim, st);
    if (t->ndim == 0) return view_of(t, 0, s, st, t->offset);
    int64_t a = wrap(dim0, t->ndim, "transpose"), b = wrap(dim1, t->ndim, "transpose");
    std::swap(s[a], s[b]);
    std::swap(st[a], st[b]);
    return view_of(t, t->ndim, s, st, t->offset);
  });
}

gn_status* gn_tensor_slice(gn_tensor* t, int64_t dim, int64_t start, int64_t stop, int64_t step, gn_tensor** out) {
  return view_entry(t, out, "slice", [&] {
    if (t->ndim == 0) fail(GN_ERR_SHAPE, "slice: cannot slice a 0-d tensor");
    if (step < 1) fail(GN_ERR_INVALID_ARGUMENT, "slice: step must be >= 1, got " + std::to_string(step));
    int64_t d = wrap(dim, t->ndim, "slice");
    int64_t n = t->shape[d];
    auto clamp = [n](int64_t i) {
      if (i < 0) i += n;
      return std::min(std::max<int64_t>(i, 0), n);
    };
    int64_t b = clamp(start), e = clamp(stop);
    // (e - b - 1) / step + 1 rather than (e - b + step - 1) / step: the latter
    // overflows for steps near INT64_MAX.
    int64_t len = e > b ? (e - b - 1) / step + 1 : 0;
    int64_t s[GN_MAX_DIMS], st[GN_MAX_DIMS];
    std::copy(t->shape, t->shape + t->ndim, s);
    std::copy(t->strides, t->strides + t->ndim, st);
    s[d] = len;
    // With at most one element the stride of dim d is never used to step.
    if (__builtin_mul_overflow(t->strides[d], step, &st[d])) {
      if (len > 1)
        fail(GN_ERR_INVALID_ARGUMENT,
             "slice: stride " + std::to_string(t->strides[d]) + " times step " + std::to_string(step) + " overflows");
      st[d] = t->strides[d];
    }
    return view_of(t, t->ndim, s, st, t->offset + (len ? b * t->strides[d] : 0));
  });
}

gn_status* gn_tensor_select(gn_tensor* t, int64_t dim, int64_t index, gn_tensor** out) {
  return view_entry(t, out, "select", [&] {
    if (t->ndim == 0) fail(GN_ERR_SHAPE, "select: cannot index a 0-d tensor");
    int64_t d = wrap(dim, t->ndim, "select");
    int64_t n = t->shape[d];
    if (index < -n || index >= n)
      fail(GN_ERR_INDEX, "select: index " + std::to_string(index) + " is out of range for dim " + std::to_string(d) +
                             " of size " + std::to_string(n));
    if (index < 0) index += n;
    int64_t s[GN_MAX_DIMS], st[GN_MAX_DIMS];
    int32_t k = 0;
    for (int32_t i = 0; i < t->ndim; ++i)
      if (i != d) s[k] = t->shape[i], st[k++] = t->strides[i];
    return view_of(t, t->ndim - 1, s, st, t->offset + index * t->strides[d]);
  });
}

gn_status* gn_tensor_expand(gn_tensor* t, const int64_t* shape, int32_t ndim, gn_tensor** out) {
  return view_entry(t, out, "expand", [&] {
    if (ndim > 0 && !shape) fail(GN_ERR_INVALID_ARGUMENT, "expand: shape is NULL with ndim " + std::to_string(ndim));
    if (ndim < t->ndim || ndim > GN_MAX_DIMS)
      fail(GN_ERR_SHAPE,
           "expand: cannot expand " + shape_string(t->ndim, t->shape) + " to rank " + std::to_string(ndim));
    int64_t s[GN_MAX_DIMS], st[GN_MAX_DIMS];
    for (int32_t i = 0; i < ndim; ++i) {
      int32_t src = i - (ndim - t->ndim);
      int64_t want = shape[i];
      if (src < 0) {
        if (want < 0) fail(GN_ERR_SHAPE, "expand: -1 not allowed for a new leading dim");
        s[i] = want, st[i] = 0;
      } else if (want == -1 || want == t->shape[src]) {
        s[i] = t->shape[src], st[i] = t->strides[src];
      } else if (t->shape[src] == 1 && want >= 0) {
        s[i] = want, st[i] = 0;
      } else {
        fail(GN_ERR_SHAPE, "expand: cannot expand " + shape_string(t->ndim, t->shape) + " to " +
                               shape_string(ndim, shape) + " (dim " + std::to_string(i) + ")");
      }
    }
    checked_numel(ndim, s, elem_size(t->dtype), "expand");
    return view_of(t, ndim, s, st, t->offset);
  });
}

gn_status* gn_tensor_squeeze(gn_tensor* t, int64_t dim, gn_tensor** out) {
  return view_entry(t, out, "squeeze", [&] {
    int64_t s[GN_MAX_DIMS], st[GN_MAX_DIMS];
    int32_t k = 0;
    int64_t only = dim == GN_DIM_NONE || t->ndim == 0 ? -1 : wrap(dim, t->ndim, "squeeze");
    for (int32_t i = 0; i < t->ndim; ++i) {
      bool drop = t->shape[i] == 1 && (only < 0 || only == i);
      if (!drop) s[k] = t->shape[i], st[k++] = t->strides[i];
    }
    return view_of(t, k, s, st, t->offset);
  });
}

gn_status* gn_tensor_unsqueeze(gn_tensor* t, int64_t dim, gn_tensor** out) {
  return view_entry(t, out, "unsqueeze", [&] {
    int64_t d = wrap(dim, t->ndim + 1, "unsqueeze");
    int64_t s[GN_MAX_DIMS], st[GN_MAX_DIMS];
    if (t->ndim + 1 > GN_MAX_DIMS) fail(GN_ERR_SHAPE, "unsqueeze: rank would exceed " + std::to_string(GN_MAX_DIMS));
    int32_t k = 0;
    for (int32_t i = 0; i <= t->ndim; ++i) {
      if (i == d) {
        s[k] = 1;
        st[k++] = i < t->ndim ? t->strides[i] * t->shape[i] : 1;
      }
      if (i < t->ndim) s[k] = t->shape[i], st[k++] = t->strides[i];
    }
    return view_of(t, t->ndim + 1, s, st, t->offset);
  });
}

gn_status* gn_tensor_as_strided(gn_tensor* t, const int64_t* shape, const int64_t* strides, int32_t ndim,
                                int64_t storage_offset, gn_tensor** out) {
  return view_entry(t, out, "as_strided", [&] {
    if (ndim < 0 || ndim > GN_MAX_DIMS) fail(GN_ERR_SHAPE, "as_strided: bad rank " + std::to_string(ndim));
    if (ndim > 0 && (!shape || !strides))
      fail(GN_ERR_INVALID_ARGUMENT,
           std::string("as_strided: ") + (shape ? "strides" : "shape") + " is NULL with ndim " + std::to_string(ndim));
    if (storage_offset < 0) fail(GN_ERR_INVALID_ARGUMENT, "as_strided: negative storage offset");
    // Bounds: the furthest element must lie inside the storage.
    int64_t last = storage_offset;
    bool empty = false;
    for (int32_t i = 0; i < ndim; ++i) {
      if (shape[i] < 0 || strides[i] < 0) fail(GN_ERR_INVALID_ARGUMENT, "as_strided: negative size or stride");
      if (shape[i] == 0) empty = true;
    }
    checked_numel(ndim, shape, elem_size(t->dtype), "as_strided");
    for (int32_t i = 0; i < ndim && !empty; ++i) {
      int64_t reach = 0;
      if (__builtin_mul_overflow(shape[i] - 1, strides[i], &reach) || __builtin_add_overflow(last, reach, &last))
        fail(GN_ERR_INVALID_ARGUMENT, "as_strided: shape " + shape_string(ndim, shape) + " with strides " +
                                          shape_string(ndim, strides) + " from offset " +
                                          std::to_string(storage_offset) + " overflows");
    }
    int64_t cap = (int64_t)(t->storage->bytes / elem_size(t->dtype));
    if (!empty && last >= cap)
      fail(GN_ERR_INDEX, "as_strided: view reaches element " + std::to_string(last) + " but the storage holds " +
                             std::to_string(cap));
    return view_of(t, ndim, shape, strides, storage_offset);
  });
}

gn_status* gn_tensor_flatten(gn_tensor* t, int64_t start_dim, int64_t end_dim, gn_tensor** out) {
  return view_entry(t, out, "flatten", [&] {
    if (t->ndim == 0) {
      int64_t one = 1;
      gn_tensor* r = nullptr;
      throw_if(gn_tensor_reshape(t, &one, 1, &r));
      return r;
    }
    int64_t a = wrap(start_dim, t->ndim, "flatten"), b = wrap(end_dim, t->ndim, "flatten");
    if (a > b) fail(GN_ERR_INVALID_ARGUMENT, "flatten: start_dim after end_dim");
    int64_t s[GN_MAX_DIMS];
    int32_t k = 0;
    for (int32_t i = 0; i < t->ndim; ++i) {
      if (i > a && i <= b)
        s[k - 1] *= t->shape[i];
      else
        s[k++] = t->shape[i];
    }
    gn_tensor* r = nullptr;
    throw_if(gn_tensor_reshape(t, s, k, &r));
    return r;
  });
}

}  // extern "C"

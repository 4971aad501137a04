// backends/cpu/ops/simd/reduce.cpp - sum mean prod max min argmax argmin var std
// logsumexp norm over any dim set, keepdim or not, every dtype the reference
// takes (argmax/argmin -> int64; f16/bf16 read exactly as double; integers
// and bool through exact int64 for sum/prod/max/min/argmax/argmin).  C++ with
// OpenMP over output groups.
//
// x is dense (GN_KERNEL_CONTIGUOUS); its dims split into kept (outer, y's
// row-major order) and reduced (inner, row-major) ones, each collapsed where
// adjacent dims are contiguous.  A group is walked as rows of the last inner
// run; rows with stride 1 are vectorised (#pragma omp simd reductions).
// Accumulation is in double for both dtypes, as in the reference, so f32
// results differ from it by the summation order only (far below an f32 ulp).
// A full reduction of one large dense tensor (sum/mean/norm p in {0,1,2})
// splits into fixed 64K-element chunks whose partial sums are added in chunk
// order: deterministic for any thread count.
// Bad dims, empty max/min/argmax/argmin and float x summed into an integer
// dtype answer "unsupported": the reference then reports or computes them, so
// the errors are exactly the reference's.
#include "genesis/sdk/scalar_tables.h"
#include "loops.h"

namespace gn::cpu::simd {
namespace {

using Red = gn::sdk::scalar::Reduction;
using ReduceDef = gn::sdk::scalar::ReductionDef;
constexpr const auto& kReduce = gn::sdk::scalar::kReductions;

struct Plan {
  std::vector<int64_t> oshape, ostr, ishape, istr;
  int64_t outer_n = 1, inner_n = 1;
};

// Collapse runs of dims where d's stride == (d+1)'s stride * (d+1)'s size.
void collapse(std::vector<int64_t>& shape, std::vector<int64_t>& str) {
  std::vector<int64_t> s2, t2;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (!s2.empty() && t2.back() == str[d] * shape[d]) {
      s2.back() *= shape[d];
      t2.back() = str[d];
    } else {
      s2.push_back(shape[d]);
      t2.push_back(str[d]);
    }
  }
  shape.swap(s2);
  str.swap(t2);
}

template <class T>
struct Group {
  const T* base;
  const Plan* p;
  int64_t row_len, row_stride, rows;
  // f(ptr, len, stride, first_index) for each row in row-major order.
  template <class F>
  void each_row(F&& f) const {
    for (int64_t r = 0; r < rows; ++r) {
      int64_t off = 0, rem = r;
      for (int64_t d = (int64_t)p->ishape.size() - 2; d >= 0; --d) {
        off += (rem % p->ishape[d]) * p->istr[d];
        rem /= p->ishape[d];
      }
      f(base + off, row_len, row_stride, r * row_len);
    }
  }
};

template <class T>
double row_sum(const T* x, int64_t n, int64_t s, int kind /*0 sum,1 abs,2 sq,3 nz*/) {
  double acc = 0.0;
  if (s == 1) {
    if (kind == 0) {
#pragma omp simd reduction(+ : acc)
      for (int64_t i = 0; i < n; ++i) acc += (double)x[i];
    } else if (kind == 1) {
#pragma omp simd reduction(+ : acc)
      for (int64_t i = 0; i < n; ++i) acc += std::fabs((double)x[i]);
    } else if (kind == 2) {
#pragma omp simd reduction(+ : acc)
      for (int64_t i = 0; i < n; ++i) acc += (double)x[i] * (double)x[i];
    } else {
#pragma omp simd reduction(+ : acc)
      for (int64_t i = 0; i < n; ++i) acc += (double)x[i] != 0.0 ? 1.0 : 0.0;
    }
    return acc;
  }
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i * s];
    acc += kind == 0 ? v : kind == 1 ? std::fabs(v) : kind == 2 ? v * v : (v != 0.0 ? 1.0 : 0.0);
  }
  return acc;
}

// One group -> its value (double) or index (argmax/argmin).
template <class T>
double reduce_group(Red kind, const Group<T>& g, int64_t n, double param, int64_t* index) {
  switch (kind) {
    case Red::sum:
    case Red::mean: {
      double s = 0.0;
      g.each_row([&](const T* x, int64_t len, int64_t st, int64_t) { s += row_sum(x, len, st, 0); });
      return kind == Red::sum ? s : s / (double)n;
    }
    case Red::prod: {
      double s = 1.0;
      g.each_row([&](const T* x, int64_t len, int64_t st, int64_t) {
        for (int64_t i = 0; i < len; ++i) s *= (double)x[i * st];
      });
      return s;
    }
    case Red::max:
    case Red::min:
    case Red::argmax:
    case Red::argmin: {
      const bool mx = kind == Red::max || kind == Red::argmax;
      double best = 0.0;
      int64_t bi = -1;
      bool nan = false;
      g.each_row([&](const T* x, int64_t len, int64_t st, int64_t first) {
        for (int64_t i = 0; i < len && !nan; ++i) {
          const double v = (double)x[i * st];
          if (v != v) {
            nan = true;
            best = v;
            bi = first + i;
            break;
          }
          if (bi < 0 || (mx ? v > best : v < best)) {
            best = v;
            bi = first + i;
          }
        }
      });
      *index = bi;
      return best;
    }
    case Red::var:
    case Red::std: {
      double mean = 0.0, ss = 0.0;
      g.each_row([&](const T* x, int64_t len, int64_t st, int64_t) { mean += row_sum(x, len, st, 0); });
      mean /= (double)n;
      g.each_row([&](const T* x, int64_t len, int64_t st, int64_t) {
        if (st == 1) {
#pragma omp simd reduction(+ : ss)
          for (int64_t i = 0; i < len; ++i) ss += ((double)x[i] - mean) * ((double)x[i] - mean);
        } else {
          for (int64_t i = 0; i < len; ++i) ss += ((double)x[i * st] - mean) * ((double)x[i * st] - mean);
        }
      });
      const double v = gn::sdk::scalar::var_finish(ss, (double)n, param);
      return kind == Red::var ? v : std::sqrt(v);
    }
    case Red::logsumexp: {
      double m = -INFINITY;
      bool nan = false;
      g.each_row([&](const T* x, int64_t len, int64_t st, int64_t) {
        for (int64_t i = 0; i < len; ++i) {
          const double v = (double)x[i * st];
          if (v != v) nan = true;
          if (v > m) m = v;
        }
      });
      if (nan) return NAN;
      if (std::isinf(m)) return m;
      double s = 0.0;
      g.each_row([&](const T* x, int64_t len, int64_t st, int64_t) {
        for (int64_t i = 0; i < len; ++i) s += std::exp((double)x[i * st] - m);
      });
      return m + std::log(s);
    }
    case Red::norm: {
      const double pw = param;
      if (std::isinf(pw)) {
        double acc = pw > 0 ? 0.0 : INFINITY;
        bool nan = false;
        g.each_row([&](const T* x, int64_t len, int64_t st, int64_t) {
          for (int64_t i = 0; i < len; ++i) {
            const double a = std::fabs((double)x[i * st]);
            if (a != a) nan = true;
            acc = pw > 0 ? std::fmax(acc, a) : std::fmin(acc, a);
          }
        });
        return nan ? NAN : acc;
      }
      double acc = 0.0;
      const int k = pw == 0.0 ? 3 : pw == 1.0 ? 1 : pw == 2.0 ? 2 : -1;
      g.each_row([&](const T* x, int64_t len, int64_t st, int64_t) {
        if (k >= 0)
          acc += row_sum(x, len, st, k);
        else
          for (int64_t i = 0; i < len; ++i) acc += gn::sdk::scalar::norm_term(std::fabs((double)x[i * st]), pw);
      });
      return gn::sdk::scalar::norm_finish(acc, pw);
    }
  }
  return 0.0;
}

// Integer groups: sum/prod (int64, wrapping), max/min (the value),
// argmax/argmin (first index of the extreme).
template <class T>
int64_t reduce_group_int(Red kind, const Group<T>& g, int64_t* index) {
  const bool mx = kind == Red::max || kind == Red::argmax;
  uint64_t acc = kind == Red::prod ? 1 : 0;
  int64_t best = 0, bi = -1;
  g.each_row([&](const T* x, int64_t len, int64_t st, int64_t first) {
    for (int64_t i = 0; i < len; ++i) {
      const int64_t v = (int64_t)x[i * st];
      if (kind == Red::sum)
        acc += (uint64_t)v;
      else if (kind == Red::prod)
        acc *= (uint64_t)v;
      else if (bi < 0 || (mx ? v > best : v < best)) {
        best = v;
        bi = first + i;
      }
    }
  });
  *index = bi;
  return kind == Red::sum || kind == Red::prod ? (int64_t)acc : best;
}

template <class T>
void reduce_run(Red kind, const gn_tensor_view& x, const gn_tensor_view& y, const Plan& p, double param,
                bool int_path) {
  const T* px = (const T*)data_of(x);
  char* yb = (char*)data_of(y);
  const size_t ye = gn_dtype_size(y.dtype);
  const bool arg = kind == Red::argmax || kind == Red::argmin;
  const int64_t row_len = p.ishape.empty() ? 1 : p.ishape.back();
  const int64_t row_stride = p.istr.empty() ? 1 : p.istr.back();
  const int64_t rows = row_len ? p.inner_n / row_len : 0;
  // Full dense reduction of a large tensor: chunked partial sums.
  const int sk = kind == Red::sum || kind == Red::mean ? 0
                 : kind == Red::norm && param == 1.0   ? 1
                 : kind == Red::norm && param == 2.0   ? 2
                 : kind == Red::norm && param == 0.0   ? 3
                                                       : -1;
  if (p.outer_n == 1 && sk >= 0 && rows == 1 && row_stride == 1 && p.inner_n > kSerialWork) {
    constexpr int64_t kChunk = 65536;
    const int64_t n = p.inner_n, chunks = (n + kChunk - 1) / kChunk;
    std::vector<double> part((size_t)chunks);
    parallel_for(chunks, kChunk, [&](int64_t c) {
      part[(size_t)c] = row_sum(px + c * kChunk, std::min(kChunk, n - c * kChunk), 1, sk);
    });
    double s = 0.0;
    for (double v : part) s += v;
    const double r = kind == Red::sum ? s : kind == Red::mean ? s / (double)n : sk == 2 ? std::sqrt(s) : s;
    gn::sdk::store(data_of(y), y.dtype, r);
    return;
  }
  parallel_for(p.outer_n, p.inner_n, [&](int64_t o) {
    int64_t off = 0, rem = o;
    for (size_t d = p.oshape.size(); d-- > 0;) {
      off += (rem % p.oshape[d]) * p.ostr[d];
      rem /= p.oshape[d];
    }
    // An empty input may have no memory (NULL data, nothing to read): no address from NULL.
    Group<T> g{px ? px + off : px, &p, row_len, row_stride, rows};
    int64_t idx = 0;
    if constexpr (std::is_integral_v<T>) {
      // integers: exact int64 (sums and products wrap, like the reference)
      if (int_path) {
        const int64_t v = reduce_group_int<T>(kind, g, &idx);
        if (arg)
          ((int64_t*)data_of(y))[o] = idx;
        else
          gn::sdk::store_int(yb + o * (int64_t)ye, y.dtype, v);
        return;
      }
    }
    const double v = reduce_group<T>(kind, g, p.inner_n, param, &idx);
    if (arg)
      ((int64_t*)data_of(y))[o] = idx;
    else if (kind == Red::max || kind == Red::min)
      st((T*)(yb + o * (int64_t)ye), v);  // a value of x: exact
    else
      gn::sdk::store(yb + o * (int64_t)ye, y.dtype, v);
  });
}

GN_SDK_KERNEL(reduce_kernel) {
  const ReduceDef& def = *(const ReduceDef*)ctx->kernel_data;
  const char* op = def.name;
  if (n_in != 1 || n_out != 1) fail_op(GN_ERR_INVALID_ARGUMENT, op, "expects 1 input and 1 output");
  const gn_tensor_view &x = in[0], &y = out[0];
  std::vector<int64_t> dims;
  double param = 0.0;
  bool all = false;
  switch (def.op) {
    case Red::argmax:
    case Red::argmin: {
      const int64_t dim = attr_i(attrs, n_attrs, 0, GN_DIM_NONE);
      if (dim == GN_DIM_NONE)
        all = true;
      else
        dims = {dim};
      break;
    }
    case Red::norm:
      param = attr_d(attrs, n_attrs, 0, 2.0);
      dims = attr_v(attrs, n_attrs, 1);
      break;
    case Red::var:
    case Red::std:
      dims = attr_v(attrs, n_attrs, 0);
      param = attr_d(attrs, n_attrs, 1, 1.0);
      break;
    default: dims = attr_v(attrs, n_attrs, 0); break;
  }
  const bool arg = def.op == Red::argmax || def.op == Red::argmin;
  // Output dtypes: argmax/argmin int64; max/min x's; sum/prod into an integer
  // dtype from integer x take the exact int path; everything else is computed
  // in double and stored once into y's float dtype.
  const bool x_int =
      x.dtype == GN_I8 || x.dtype == GN_U8 || x.dtype == GN_I32 || x.dtype == GN_I64 || x.dtype == GN_BOOL;
  const bool y_int =
      y.dtype == GN_I8 || y.dtype == GN_U8 || y.dtype == GN_I32 || y.dtype == GN_I64 || y.dtype == GN_BOOL;
  const bool extreme = def.op == Red::max || def.op == Red::min;
  const bool int_path = x_int && (arg || extreme || ((def.op == Red::sum || def.op == Red::prod) && y_int));
  bool ok = arg ? y.dtype == GN_I64 : extreme ? y.dtype == x.dtype : (int_path || !y_int);
  if (!ok) GN_UNSUPPORTED(std::string("[") + op + "] " + gn_dtype_name(x.dtype) + " -> " + gn_dtype_name(y.dtype));
  std::vector<bool> red((size_t)x.ndim, dims.empty() || all);
  std::vector<bool> seen((size_t)x.ndim, false);
  for (int64_t d : dims) {
    const int64_t n = x.ndim > 0 ? x.ndim : 1;
    if (d < -n || d >= n) GN_UNSUPPORTED(std::string("[") + op + "] dim out of range");
    if (x.ndim == 0) continue;
    const int64_t w = d < 0 ? d + n : d;
    if (seen[(size_t)w]) GN_UNSUPPORTED(std::string("[") + op + "] repeated dim");
    seen[(size_t)w] = red[(size_t)w] = true;
  }
  Plan p;
  for (int32_t d = 0; d < x.ndim; ++d) {
    auto& sh = red[(size_t)d] ? p.ishape : p.oshape;
    auto& st = red[(size_t)d] ? p.istr : p.ostr;
    sh.push_back(x.shape[d]);
    st.push_back(x.strides[d]);
    (red[(size_t)d] ? p.inner_n : p.outer_n) *= x.shape[d];
  }
  if (gn_view_numel(&y) != p.outer_n) GN_UNSUPPORTED(std::string("[") + op + "] output shape");
  const bool needs_elems = def.op == Red::max || def.op == Red::min || arg;
  if (needs_elems && p.inner_n == 0 && p.outer_n > 0) GN_UNSUPPORTED(std::string("[") + op + "] empty reduction");
  if (p.outer_n == 0) return;
  if (p.inner_n > 0) {
    collapse(p.ishape, p.istr);
    collapse(p.oshape, p.ostr);
  } else {
    p.ishape = {0};
    p.istr = {1};
  }
  if (!dispatch_dtype(x.dtype, [&](auto tag) {
        reduce_run<typename Storage<decltype(tag)::value>::T>(def.op, x, y, p, param, int_path);
      }))
    GN_UNSUPPORTED(std::string("[") + op + "] dtype");
}

}  // namespace

void register_reduce(const gn::sdk::Registrar& r) {
  // Every reduction of the shared list (GN_SCALAR_REDUCE_OPS) with the dtypes it lists.
  const int32_t all[] = {GN_F32, GN_F64, GN_F16, GN_BF16, GN_I8, GN_U8, GN_I32, GN_I64, GN_BOOL};
  for (const ReduceDef& d : kReduce)
    for (int32_t dt : all)
      if (gn::sdk::scalar::reduce_takes(d.inputs, dt))
        r.kernel(d.name, dt, reduce_kernel, GN_KERNEL_CONTIGUOUS, (void*)&d);
}

}  // namespace gn::cpu::simd

// backends/cpu/ops/onednn/linalg.cpp - matmul and bmm through oneDNN matmul
// primitives (matmul_run, matmul.h, also serves linear and linear_swiglu:
// onednn/llm.cpp).
//
// out (batch..., M, N) = a (batch..., M, K) @ b (batch..., K, N) with torch.matmul
// semantics: a 1-D a is (1, K) and its M dim is absent from out, a 1-D b is
// (K, 1) and its N dim is absent; batch dims broadcast (oneDNN broadcasts a
// batch dim of size 1).  trans_a/trans_b swap the last two dims, which here
// only swaps two strides: no data moves.  Dtypes: f32, bf16, f16 in oneDNN,
// all three operands alike; what oneDNN cannot do on this CPU (f16 before
// AVX512-FP16), f64, i32/i64 and K == 0 run the C++ loops below.  Primitives
// are cached by dtype and the dims/strides of all three operands.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>

#include "matmul.h"

namespace gn::cpu::onednn {
namespace {

// One operand as dims/strides of rank nb+2 for the primitive.
struct Operand {
  std::vector<int64_t> dims, strides;
};

// Strides of size-1 dims are free in the view (a contiguous tensor may carry
// anything there) but oneDNN derives its layout from them: give each such dim
// the stride a dense dim would have just outside the dims it spans.
void tidy_unit_strides(Operand& o) {
  int64_t span = 1;
  for (size_t d = 0; d < o.dims.size(); ++d)
    if (o.dims[d] != 1) span = std::max(span, o.strides[d] * o.dims[d]);
  // outermost-first so that nested unit dims stay ordered
  for (size_t d = 0; d < o.dims.size(); ++d)
    if (o.dims[d] == 1) o.strides[d] = span;
}

// The matrix part of v (rows x cols after an optional transpose) and its batch
// dims right-aligned into nb dims; 1-D operands are promoted as torch does.
// Returns false where the layout cannot be described (zero stride on a matrix dim).
bool as_operand(const gn_tensor_view& v, bool is_b, bool trans, size_t nb, Operand& o, int64_t& rows, int64_t& cols) {
  int64_t rs, cs;
  if (v.ndim == 1) {
    if (is_b) {
      rows = v.shape[0];
      cols = 1;
      rs = v.strides[0];
      cs = 1;
    } else {
      rows = 1;
      cols = v.shape[0];
      rs = v.shape[0] * v.strides[0];
      cs = v.strides[0];
    }
  } else {
    rows = v.shape[v.ndim - 2];
    cols = v.shape[v.ndim - 1];
    rs = v.strides[v.ndim - 2];
    cs = v.strides[v.ndim - 1];
    if (trans) {
      std::swap(rows, cols);
      std::swap(rs, cs);
    }
  }
  if ((rows > 1 && rs <= 0) || (cols > 1 && cs <= 0)) return false;
  const size_t vb = v.ndim > 2 ? (size_t)v.ndim - 2 : 0;
  o.dims.assign(nb + 2, 1);
  o.strides.assign(nb + 2, 1);
  for (size_t d = 0; d < vb; ++d) {
    const size_t od = nb - vb + d;
    int64_t size = v.shape[d], stride = v.strides[d];
    if (stride == 0 || size == 1)
      size = 1;  // expanded dim: let oneDNN broadcast it
    else if (stride < 0)
      return false;
    o.dims[od] = size;
    o.strides[od] = stride;
  }
  o.dims[nb] = rows;
  o.strides[nb] = rs;
  o.dims[nb + 1] = cols;
  o.strides[nb + 1] = cs;
  tidy_unit_strides(o);
  return true;
}

// The C++ path: what oneDNN lacks (f64, integers, f16 on CPUs without
// AVX512-FP16, K == 0).  Rows of all batches in parallel; each output row
// accumulates over k in increasing order (the reference's order) in double
// (int64, wrapping, for integers), b's rows streamed so the inner loop over n
// vectorises (vfmadd...pd over contiguous b rows), and is rounded once.
template <class T>
void matmul_loops(const Operand& oa, const Operand& ob, const Operand& oc, size_t nb, int64_t K, const void* pa_,
                  const void* pb_, void* po_) {
  const T* pa = (const T*)pa_;
  const T* pb = (const T*)pb_;
  T* po = (T*)po_;
  const int64_t M = oc.dims[nb], N = oc.dims[nb + 1];
  int64_t batches = 1;
  for (size_t d = 0; d < nb; ++d) batches *= oc.dims[d];
  constexpr bool kInt = std::is_integral_v<T>;
  using Acc = std::conditional_t<kInt, uint64_t, double>;
  parallel_for(batches * M, K * N, [&](int64_t r) {
    int64_t bi = r / M, m = r % M, offa = 0, offb = 0, offo = 0;
    for (size_t d = nb; d-- > 0;) {
      const int64_t i = bi % oc.dims[d];
      bi /= oc.dims[d];
      if (oa.dims[d] != 1) offa += i * oa.strides[d];
      if (ob.dims[d] != 1) offb += i * ob.strides[d];
      offo += i * oc.strides[d];
    }
    thread_local std::vector<Acc> acc;
    acc.assign((size_t)N, Acc(0));
    // K == 0: empty inputs may have no memory (NULL data): no address is formed from it.
    const T* arow = K ? pa + offa + m * oa.strides[nb] : nullptr;
    const int64_t ak = oa.strides[nb + 1], bk = ob.strides[nb], bn = ob.strides[nb + 1];
    Acc* ac = acc.data();
    for (int64_t k = 0; k < K; ++k) {
      const T* brow = pb + offb + k * bk;
      if constexpr (kInt) {
        const uint64_t av = (uint64_t)(int64_t)arow[k * ak];
        for (int64_t n = 0; n < N; ++n) ac[n] += av * (uint64_t)(int64_t)brow[n * bn];
      } else {
        const double av = ld(arow + k * ak);
        if (bn == 1) {
#pragma omp simd
          for (int64_t n = 0; n < N; ++n) ac[n] += av * ld(brow + n);
        } else {
          for (int64_t n = 0; n < N; ++n) ac[n] += av * ld(brow + n * bn);
        }
      }
    }
    T* orow = po + offo + m * oc.strides[nb];
    const int64_t on = oc.strides[nb + 1];
    for (int64_t n = 0; n < N; ++n) {
      if constexpr (kInt)
        orow[n * on] = (T)(int64_t)ac[n];
      else
        st(orow + n * on, ac[n]);
    }
  });
}

// Below this many multiply-adds a matmul runs as one primitive on the calling
// thread; above it, blocks of it run on the pool (threads.h).
constexpr int64_t kSplitWork = int64_t(1) << 18;
// The fewest rows (M split) or columns (N split) a block gets.
constexpr int64_t kMinBlock = 16;

// One oneDNN matmul on (dims, strides) operands, on the calling thread; false
// when oneDNN has no implementation for the shape and dtype.
bool matmul_block(const gn_kernel_ctx* ctx, int32_t dt, const Operand& oa, const Operand& ob, const Operand& oc,
                  const void* pa, const void* pb, void* po) {
  Key key("matmul");
  key.add((int64_t)dt).add(oa.dims).add(oa.strides).add(ob.dims).add(ob.strides).add(oc.dims).add(oc.strides);
  auto c = cached(key, [&](Cached& e) {
    e.src_md = make_md(oa.dims, oa.strides, dt);
    e.src1_md = make_md(ob.dims, ob.strides, dt);
    e.dst_md = make_md(oc.dims, oc.strides, dt);
    dnnl::matmul::desc d(e.src_md, e.src1_md, e.dst_md);
    dnnl::matmul::primitive_desc pd(d, base_attr(), engine());
    finish(e, pd);
    e.prim = dnnl::matmul(pd);
  });
  if (!c->supported) return false;  // e.g. f16 without AVX512-FP16
  execute(ctx, *c,
          {{DNNL_ARG_SRC, mem(c->src_md, pa)},
           {DNNL_ARG_WEIGHTS, mem(c->src1_md, pb)},
           {DNNL_ARG_DST, mem(c->dst_md, po)}});
  return true;
}

}  // namespace

void matmul_run(const char* op, const gn_kernel_ctx* ctx, const gn_tensor_view& a, const gn_tensor_view& b,
                const gn_tensor_view& out, bool trans_a, bool trans_b) {
  const int32_t dt = out.dtype;
  if (a.dtype != dt || b.dtype != dt)
    GN_UNSUPPORTED(std::string("[") + op + "] dtypes " + gn_dtype_name(a.dtype) + "/" + gn_dtype_name(b.dtype) +
                   " -> " + gn_dtype_name(dt));
  if (a.ndim < 1 || b.ndim < 1) GN_UNSUPPORTED(std::string("[") + op + "] 0-d operands");
  if ((a.ndim == 1 && trans_a) || (b.ndim == 1 && trans_b)) GN_UNSUPPORTED(std::string("[") + op + "] 1-D transpose");

  // Batch rank of the output: out (ob..., [M], [N]).
  const int32_t out_mat = (a.ndim > 1) + (b.ndim > 1);
  const size_t nb = (size_t)(out.ndim - out_mat);
  if (out.ndim < out_mat || nb + 2 > DNNL_MAX_NDIMS) GN_UNSUPPORTED(std::string("[") + op + "] rank");

  // Output dims with the absent M/N dims put back as size 1.
  Operand oc;
  oc.dims.assign(out.shape, out.shape + nb);
  oc.strides.assign(out.strides, out.strides + nb);
  const int64_t M = a.ndim > 1 ? out.shape[nb] : 1;
  const int64_t N = b.ndim > 1 ? out.shape[out.ndim - 1] : 1;
  const int64_t sm = a.ndim > 1 ? out.strides[nb] : 1;
  const int64_t sn = b.ndim > 1 ? out.strides[out.ndim - 1] : 1;
  oc.dims.push_back(M);
  oc.strides.push_back(sm);
  oc.dims.push_back(N);
  oc.strides.push_back(sn);
  int64_t out_numel = 1;
  for (int64_t d : oc.dims) out_numel *= d;
  if (out_numel == 0) return;  // nothing to write
  for (size_t d = 0; d < oc.dims.size(); ++d)
    if (oc.dims[d] > 1 && oc.strides[d] <= 0) GN_UNSUPPORTED(std::string("[") + op + "] output layout");
  tidy_unit_strides(oc);

  Operand oa, ob;
  int64_t am, ak, bk, bn;
  if (!as_operand(a, false, trans_a, nb, oa, am, ak) || !as_operand(b, true, trans_b, nb, ob, bk, bn))
    GN_UNSUPPORTED(std::string("[") + op + "] operand layout");
  if (am != M || bn != N || ak != bk) fail_op(GN_ERR_SHAPE, op, "operand shapes do not match the output");
  for (size_t d = 0; d < nb; ++d)
    if ((oa.dims[d] != 1 && oa.dims[d] != oc.dims[d]) || (ob.dims[d] != 1 && ob.dims[d] != oc.dims[d]))
      fail_op(GN_ERR_SHAPE, op, "batch dims do not broadcast to the output");
  auto loops = [&] {
    switch (dt) {
      case GN_F32: return matmul_loops<float>(oa, ob, oc, nb, ak, data_of(a), data_of(b), data_of(out));
      case GN_F64: return matmul_loops<double>(oa, ob, oc, nb, ak, data_of(a), data_of(b), data_of(out));
      case GN_F16: return matmul_loops<f16_t>(oa, ob, oc, nb, ak, data_of(a), data_of(b), data_of(out));
      case GN_BF16: return matmul_loops<bf16_t>(oa, ob, oc, nb, ak, data_of(a), data_of(b), data_of(out));
      case GN_I32: return matmul_loops<int32_t>(oa, ob, oc, nb, ak, data_of(a), data_of(b), data_of(out));
      case GN_I64: return matmul_loops<int64_t>(oa, ob, oc, nb, ak, data_of(a), data_of(b), data_of(out));
      default: GN_UNSUPPORTED(std::string("[") + op + "] " + gn_dtype_name(dt));
    }
  };
  if (ak == 0 || (dt != GN_F32 && dt != GN_BF16 && dt != GN_F16)) return loops();  // K == 0: zeros

  const char* pa = (const char*)data_of(a);
  const char* pb = (const char*)data_of(b);
  char* po = (char*)data_of(out);
  const int64_t work = out_numel * ak;  // multiply-adds
  const int threads = num_threads();
  if (threads == 1 || work < kSplitWork) {
    if (!matmul_block(ctx, dt, oa, ob, oc, pa, pb, po)) loops();
    return;
  }
  // Split one output dim into blocks, one single-threaded primitive each: the
  // outermost batch dim with more than one entry, else M or N, whichever
  // gives whole blocks of at least kMinBlock rows/columns.
  int split = -1;
  for (size_t d = 0; d < nb && split < 0; ++d)
    if (oc.dims[d] > 1) split = (int)d;
  if (split < 0) split = (M >= N || N < 2 * kMinBlock) ? (int)nb : (int)nb + 1;
  const int64_t extent = oc.dims[(size_t)split];
  const int64_t min_block = split < (int)nb ? 1 : kMinBlock;
  const int64_t blocks = std::min<int64_t>((int64_t)threads, extent / min_block);
  if (blocks < 2) {
    if (!matmul_block(ctx, dt, oa, ob, oc, pa, pb, po)) loops();
    return;
  }
  // oneDNN refusing a block shape refuses the whole problem's shape too: check once, on block 0's shape.
  const size_t es = gn_dtype_size(dt);
  std::atomic<bool> refused{false};
  parallel_chunks(blocks, [&](int64_t i) {
    const int64_t begin = i * extent / blocks, len = (i + 1) * extent / blocks - begin;
    Operand ba = oa, bb = ob, bc = oc;
    const char *qa = pa, *qb = pb;
    char* qo = po + (size_t)(begin * oc.strides[(size_t)split]) * es;
    bc.dims[(size_t)split] = len;
    const bool in_a = split < (int)nb ? oa.dims[(size_t)split] != 1 : split == (int)nb;
    const bool in_b = split < (int)nb ? ob.dims[(size_t)split] != 1 : split == (int)nb + 1;
    if (in_a) {
      qa += (size_t)(begin * oa.strides[(size_t)split]) * es;
      ba.dims[(size_t)split] = len;
    }
    if (in_b) {
      qb += (size_t)(begin * ob.strides[(size_t)split]) * es;
      bb.dims[(size_t)split] = len;
    }
    tidy_unit_strides(ba);
    tidy_unit_strides(bb);
    tidy_unit_strides(bc);
    // Blocks run at once: scratch comes from each thread's own buffer, not the call's workspace.
    if (!refused.load() && !matmul_block(nullptr, dt, ba, bb, bc, qa, qb, qo)) refused.store(true);
  });
  if (refused.load()) loops();  // every block is rewritten by the C++ path
}

namespace {

bool flag(const gn_attr_value* attrs, size_t n_attrs, size_t i) {
  return i < n_attrs && attrs[i].kind == GN_ATTR_INT && attrs[i].u.i != 0;
}

GN_SDK_KERNEL(matmul_kernel) {
  if (n_in != 2 || n_out != 1) fail_op(GN_ERR_INVALID_ARGUMENT, "matmul", "expects 2 inputs and 1 output");
  matmul_run("matmul", ctx, in[0], in[1], out[0], flag(attrs, n_attrs, 0), flag(attrs, n_attrs, 1));
}

// bmm is matmul restricted to 3-D operands (same batch): the same path serves it.
GN_SDK_KERNEL(bmm_kernel) {
  if (n_in != 2 || n_out != 1) fail_op(GN_ERR_INVALID_ARGUMENT, "bmm", "expects 2 inputs and 1 output");
  if (in[0].ndim != 3 || in[1].ndim != 3 || out[0].ndim != 3) GN_UNSUPPORTED("[bmm] non 3-D operands");
  matmul_run("bmm", ctx, in[0], in[1], out[0], flag(attrs, n_attrs, 0), flag(attrs, n_attrs, 1));
}

}  // namespace

void register_linalg(const gn::sdk::Registrar& r) {
  const int32_t dtypes[] = {GN_F32, GN_BF16, GN_F16, GN_F64, GN_I32, GN_I64};
  r.kernel("matmul", dtypes, matmul_kernel);
  r.kernel("bmm", dtypes, bmm_kernel);
}

}  // namespace gn::cpu::onednn

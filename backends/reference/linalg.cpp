// backends/reference/linalg.cpp - matmul (torch.matmul semantics) and bmm.
//
// Both walk the operands through their own strides (no copies): every output
// element is one dot product accumulated in double (float dtypes) or in
// wrapping int64 (integer dtypes, exact like torch).
#include <algorithm>
#include <string>
#include <vector>

#include "dense.h"
#include "families.h"

namespace gn::reference {
namespace {

using namespace gn::reference::dense;
using gn::sdk::fail;

// ----------------------------------------------------------------------------
// A matrix operand seen as (batch..., rows, cols) with element strides.

struct MatOperand {
  Shape batch, batch_strides;
  int64_t rows = 1, cols = 1, row_stride = 0, col_stride = 0;
  const char* base = nullptr;  // first element
  int32_t dtype = GN_F32;
};

// v as a matrix; `is_b` picks how a 1-D operand is promoted ((1,K) for a,
// (K,1) for b); `trans` swaps the last two dims (ignored for a 1-D operand).
MatOperand as_matrix(const gn_tensor_view& v, bool is_b, bool trans) {
  MatOperand m;
  m.base = (const char*)v.data + v.byte_offset;
  m.dtype = v.dtype;
  if (v.ndim == 1) {
    if (is_b) {
      m.rows = v.shape[0];
      m.row_stride = v.strides[0];
    }  // (K, 1)
    else {
      m.cols = v.shape[0];
      m.col_stride = v.strides[0];
    }  // (1, K)
    return m;
  }
  int32_t nd = v.ndim;
  m.batch.assign(v.shape, v.shape + nd - 2);
  m.batch_strides.assign(v.strides, v.strides + nd - 2);
  m.rows = v.shape[nd - 2];
  m.row_stride = v.strides[nd - 2];
  m.cols = v.shape[nd - 1];
  m.col_stride = v.strides[nd - 1];
  if (trans) {
    std::swap(m.rows, m.cols);
    std::swap(m.row_stride, m.col_stride);
  }
  return m;
}

// Strides of m's batch dims broadcast against the output batch shape `ob`.
Shape batch_bcast_strides(const char* op, const MatOperand& m, const Shape& ob) {
  size_t nd = ob.size(), md = m.batch.size();
  Shape st(nd, 0);
  for (size_t d = 0; d < md; ++d) {
    size_t od = d + nd - md;
    if (m.batch[d] == ob[od])
      st[od] = m.batch_strides[d];
    else if (m.batch[d] != 1)
      fail(GN_ERR_SHAPE, std::string("[") + op + "] batch dims do not broadcast");
  }
  return st;
}

bool is_int_dtype(int32_t dt) { return gn_dtype_is_int(dt) || dt == GN_BOOL; }

// out (batch..., M, N) = a (batch..., M, K) @ b (batch..., K, N), batch dims
// broadcast.  a1d / b1d: the matching M / N dim is absent from out.
void matmul_forward(const char* op, const gn_tensor_view& av, const gn_tensor_view& bv, const gn_tensor_view& out,
                    bool trans_a, bool trans_b) {
  if (av.ndim < 1 || bv.ndim < 1) fail(GN_ERR_SHAPE, std::string("[") + op + "] operands must be at least 1-D");
  MatOperand a = as_matrix(av, false, trans_a);
  MatOperand b = as_matrix(bv, true, trans_b);
  int64_t M = a.rows, K = a.cols, N = b.cols;
  if (b.rows != K)
    fail(GN_ERR_SHAPE, std::string("[") + op + "] inner dims differ: " + shape_str(shape_of(av)) +
                           (trans_a ? "^T" : "") + " @ " + shape_str(shape_of(bv)) + (trans_b ? "^T" : ""));
  // output batch shape: broadcast of both batch shapes
  size_t nb = std::max(a.batch.size(), b.batch.size());
  Shape ob(nb, 1);
  for (size_t d = 0; d < nb; ++d) {
    int64_t sa = d + a.batch.size() >= nb ? a.batch[d + a.batch.size() - nb] : 1;
    int64_t sb = d + b.batch.size() >= nb ? b.batch[d + b.batch.size() - nb] : 1;
    if (sa != sb && sa != 1 && sb != 1) fail(GN_ERR_SHAPE, std::string("[") + op + "] batch dims do not broadcast");
    ob[d] = sa == 1 ? sb : sa;
  }
  Shape want = ob;
  if (av.ndim > 1) want.push_back(M);
  if (bv.ndim > 1) want.push_back(N);
  expect_shape(op, "output", out, want);
  Shape sa = batch_bcast_strides(op, a, ob), sb = batch_bcast_strides(op, b, ob);
  // output strides of the (m, n) dims; 0 where the dim is absent
  int32_t ond = out.ndim;
  int64_t om = 0, on = 0;
  if (av.ndim > 1 && bv.ndim > 1) {
    om = out.strides[ond - 2];
    on = out.strides[ond - 1];
  } else if (av.ndim > 1)
    om = out.strides[ond - 1];
  else if (bv.ndim > 1)
    on = out.strides[ond - 1];
  Shape ostr(out.strides, out.strides + nb);

  int64_t n_batch = prod(ob);
  if (n_batch == 0 || M == 0 || N == 0) return;
  int64_t ea = (int64_t)gn_dtype_size(a.dtype), eb = (int64_t)gn_dtype_size(b.dtype);
  int64_t eo = (int64_t)gn_dtype_size(out.dtype);
  char* obase = (char*)out.data + out.byte_offset;
  bool ints = is_int_dtype(out.dtype);
  Shape idx(nb, 0);
  for (int64_t bi = 0; bi < n_batch; ++bi) {
    int64_t offa = 0, offb = 0, offo = 0;
    for (size_t d = 0; d < nb; ++d) {
      offa += idx[d] * sa[d];
      offb += idx[d] * sb[d];
      offo += idx[d] * ostr[d];
    }
    for (int64_t m = 0; m < M; ++m) {
      for (int64_t n = 0; n < N; ++n) {
        // K == 0: the inputs are empty and may have no memory at all (NULL data), so no
        // address is formed (an offset from NULL is undefined); the sums below are then 0.
        const char* pa = K ? a.base + (offa + m * a.row_stride) * ea : nullptr;
        const char* pb = K ? b.base + (offb + n * b.col_stride) * eb : nullptr;
        char* po = obase + (offo + m * om + n * on) * eo;
        if (ints) {
          uint64_t acc = 0;  // wraps like torch's integer matmul
          for (int64_t k = 0; k < K; ++k)
            acc += (uint64_t)gn::sdk::load_int(pa + k * a.col_stride * ea, a.dtype) *
                   (uint64_t)gn::sdk::load_int(pb + k * b.row_stride * eb, b.dtype);
          gn::sdk::store_int(po, out.dtype, (int64_t)acc);
        } else {
          double acc = 0.0;
          for (int64_t k = 0; k < K; ++k)
            acc +=
                gn::sdk::load(pa + k * a.col_stride * ea, a.dtype) * gn::sdk::load(pb + k * b.row_stride * eb, b.dtype);
          gn::sdk::store(po, out.dtype, acc);
        }
      }
    }
    gn::sdk::next_index(idx.data(), ob.data(), (int32_t)nb);
  }
}

// ----------------------------------------------------------------------------
// kernels

GN_SDK_KERNEL(matmul_kernel) {
  expect_io("matmul", n_in, 2, n_out, 1);
  bool ta = attr_int("matmul", attrs, n_attrs, 0) != 0, tb = attr_int("matmul", attrs, n_attrs, 1) != 0;
  matmul_forward("matmul", in[0], in[1], out[0], ta, tb);
}

// a (B,M,K) (or (B,K,M) with trans_a) @ b (B,K,N) (or (B,N,K) with trans_b) -> (B,M,N)
GN_SDK_KERNEL(bmm_kernel) {
  expect_io("bmm", n_in, 2, n_out, 1);
  expect_ndim("bmm", "a", in[0], 3);
  expect_ndim("bmm", "b", in[1], 3);
  if (in[0].shape[0] != in[1].shape[0])
    fail(GN_ERR_SHAPE,
         "[bmm] batch sizes differ: " + std::to_string(in[0].shape[0]) + " vs " + std::to_string(in[1].shape[0]));
  bool ta = attr_int("bmm", attrs, n_attrs, 0) != 0, tb = attr_int("bmm", attrs, n_attrs, 1) != 0;
  matmul_forward("bmm", in[0], in[1], out[0], ta, tb);
}

}  // namespace

void register_linalg(const gn::sdk::Registrar& r) {
  const int32_t dtypes[] = {GN_F32, GN_F64, GN_F16, GN_BF16, GN_I32, GN_I64};
  r.kernel("matmul", dtypes, matmul_kernel);
  r.kernel("bmm", dtypes, bmm_kernel);
}

}  // namespace gn::reference

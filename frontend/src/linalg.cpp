// linalg.cpp - genesis::linalg (genesis/linalg.hpp): torch.linalg's factorizations and solves
// on the linalg_decomp ops of ops.def, with torch's checks, messages and broadcasting.
//
// Autograd: solve, inv, det and slogdet record frontend nodes (the GN_FRONTEND rows
// linalg_solve, linalg_inv, linalg_det, linalg_slogdet) that keep the LU factorization for
// their rules; cholesky and solve_triangular record their op; qr, svd and eigh, whose outputs
// are all differentiable, record one node whose output packs every output (flattened, one
// after the other) and hand out views of it, so that the gradients of the outputs meet in one
// packed gradient (autograd::Node has one output).  Rules: autograd/rules_linalg.cpp.
#include "genesis/linalg.hpp"

#include <algorithm>
#include <cmath>

#include "autograd/rules.h"
#include "genesis/nn/functional.hpp"
#include "internal.h"

namespace genesis::linalg {

using autograd::record;
using detail::call;
using detail::call1;
namespace R = autograd::rules;
namespace F = nn::functional;

namespace {

Error fail(const std::string& msg) { return Error(GN_ERR_INVALID_ARGUMENT, msg); }

// torch's names of dtypes in its linalg messages.
std::string torch_dtype(DType d) {
  switch (d) {
    case DType::f32: return "Float";
    case DType::f64: return "Double";
    case DType::f16: return "Half";
    case DType::bf16: return "BFloat16";
    case DType::i64: return "Long";
    case DType::i32: return "Int";
    case DType::i8: return "Char";
    case DType::u8: return "Byte";
    default: return "Bool";
  }
}

// A float32/float64 tensor with at least 2 dims (torch's checks and words; `what` names the input).
void need_matrix(const char* fn, const Tensor& A, const char* what = "A") {
  if (A.dim() < 2) throw fail(std::string(fn) + ": The input tensor " + what + " must have at least 2 dimensions.");
  if (!is_floating(A.dtype()))
    throw fail(std::string(fn) + ": Expected a floating point or complex tensor as input. Got " +
               torch_dtype(A.dtype()));
  if (A.dtype() != DType::f32 && A.dtype() != DType::f64)
    throw fail(std::string(fn) + ": Low precision dtypes not supported. Got " + torch_dtype(A.dtype()));
}

void need_square(const char* fn, const Tensor& A, const char* what = "A") {
  need_matrix(fn, A, what);
  if (A.size(-1) != A.size(-2))
    throw fail(std::string(fn) + ": " + what + " must be batches of square matrices, but they are " +
               std::to_string(A.size(-2)) + " by " + std::to_string(A.size(-1)) + " matrices");
}

Shape batch_of(const Tensor& t, int64_t tail) {
  const Shape s = t.shape();
  return Shape(s.begin(), s.end() - tail);
}

// NumPy broadcast of two batch shapes.
Shape broadcast_batch(const char* fn, const Shape& a, const Shape& b) {
  const size_t n = std::max(a.size(), b.size());
  Shape r(n, 1);
  for (size_t i = 0; i < n; ++i) {
    const int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())], y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (x != y && x != 1 && y != 1)
      throw fail(std::string(fn) + ": the batch dimensions of A and B cannot be broadcast");
    r[i] = x == 1 ? y : x;
  }
  return r;
}

Shape cat_shape(Shape a, std::initializer_list<int64_t> tail) {
  a.insert(a.end(), tail.begin(), tail.end());
  return a;
}

// "(Batch element i): " for the first batch element whose info is non-zero (-1: none), and that
// info; no prefix for a single matrix.
struct Failure {
  int64_t batch = -1, info = 0;
  std::string prefix;
};
Failure first_failure(const Tensor& info) {
  Failure f;
  const std::vector<double> v = info.tolist();
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] != 0) {
      f.batch = static_cast<int64_t>(i);
      f.info = static_cast<int64_t>(v[i]);
      if (info.dim() > 0) f.prefix = "(Batch element " + std::to_string(i) + "): ";
      break;
    }
  return f;
}

LUFactorEx lu(const Tensor& A) {
  NoGradGuard ng;
  auto r = call(GN_OP_HANDLE("lu_factor"), {&A}, {}, 3);
  return {r[0], r[1], r[2]};
}

Tensor lu_solve_op(const Tensor& LU, const Tensor& piv, const Tensor& B, bool adjoint) {
  NoGradGuard ng;
  return call1(GN_OP_HANDLE("lu_solve"), {&LU, &piv, &B}, {gn_attr_int(adjoint ? 1 : 0)});
}

// The diagonals (*, n) of square matrices (*, n, n), as a strided view.
Tensor diagonal(const Tensor& M) {
  const int64_t n = M.size(-1);
  Shape s = batch_of(M, 2);
  s.push_back(n * n);
  return M.contiguous().reshape(s).slice(-1, 0, n * n, n + 1);
}

// floor(a / 2) of a non-negative int64 tensor.
Tensor floor_div2(const Tensor& a) {
  Tensor two = full({}, 2, {.dtype = DType::i64, .device = a.device()});
  return call1(GN_OP_HANDLE("div"), {&a, &two}, {gn_attr_int(2)});
}

// (-1)^(number of row interchanges) of lu_factor's pivots (*, n), as a float tensor.
Tensor pivot_sign(const Tensor& piv, DType dt) {
  const int64_t n = piv.size(-1);
  Tensor ids = arange(1, static_cast<double>(n + 1), 1, {.dtype = DType::i32, .device = piv.device()});
  Tensor swaps = (piv != ids).to(DType::i64).sum(-1);
  Tensor odd = swaps - floor_div2(swaps) * Scalar(2);
  return Scalar(1) - odd.to(dt) * Scalar(2);
}

// Outputs of a multi-output op as views of one packed, recorded tensor (see the file comment).
std::vector<Tensor> packed(const char* name, autograd::Rule rule, const gn_op* op,
                           std::initializer_list<gn_attr_value> attrs, const Tensor& A, const std::vector<Tensor>& outs,
                           const std::vector<const char*>& names) {
  if (!autograd::grad_enabled() || !A.requires_grad()) return outs;
  std::vector<Tensor> flat;
  for (const Tensor& o : outs) flat.push_back(o.reshape({-1}));
  Tensor p;
  {
    NoGradGuard ng;
    p = F::cat(flat, 0);
  }
  if (auto n = record(name, rule, {A}, p)) {
    for (size_t i = 0; i < outs.size(); ++i) n->save(names[i], outs[i].detach());
    n->keep_attrs(op, attrs);
  }
  std::vector<Tensor> res;
  int64_t off = 0;
  for (const Tensor& o : outs) {
    res.push_back(p.slice(0, off, off + o.numel()).reshape(o.shape()));
    off += o.numel();
  }
  return res;
}

// A X = B for matrices B (*, n, k), batch dims broadcast; recorded as linalg_solve.
Tensor solve_matrices(const char* fn, Tensor A, Tensor B) {
  GN_AUTOCAST("linalg_solve", &A, &B);
  const int64_t n = A.size(-1), k = B.size(-1);
  if (B.size(-2) != n)
    throw fail(std::string(fn) + ": Incompatible shapes of A and B for the equation AX = B (" + std::to_string(n) +
               "x" + std::to_string(n) + " and " + std::to_string(B.size(-2)) + "x" + std::to_string(k) + ")");
  const Shape batch = broadcast_batch(fn, batch_of(A, 2), batch_of(B, 2));
  Tensor Ab = A.expand(cat_shape(batch, {n, n})), Bb = B.expand(cat_shape(batch, {n, k}));
  if (Ab.dtype() != Bb.dtype()) {
    const DType dt = Ab.dtype() == DType::f64 || Bb.dtype() == DType::f64 ? DType::f64 : DType::f32;
    Ab = Ab.to(dt), Bb = Bb.to(dt);
  }
  const LUFactorEx f = lu(Ab);
  const Failure bad = first_failure(f.info);
  if (bad.batch >= 0)
    throw LinAlgError("torch.linalg.solve: " + bad.prefix + "The solver failed because the input matrix is singular.");
  Tensor X = lu_solve_op(f.LU, f.pivots, Bb, false);
  if (auto node = record("linalg_solve", R::linalg_solve, {A, B}, X)) {
    node->save("lu", f.LU);
    node->save("pivots", f.pivots);
    node->save("x", X.detach());
  }
  return X;
}

}  // namespace

LUFactorEx lu_factor_ex(const Tensor& A) {
  need_matrix("torch.linalg.lu_factor_ex", A);
  return lu(A.detach());
}

std::pair<Tensor, Tensor> lu_factor(const Tensor& A) {
  need_matrix("torch.linalg.lu_factor", A);
  const LUFactorEx f = lu(A.detach());
  const Failure bad = first_failure(f.info);
  if (bad.batch >= 0)
    throw fail("torch.linalg.lu_factor: " + bad.prefix + "U[" + std::to_string(bad.info) + "," +
               std::to_string(bad.info) +
               "] is zero and using it on lu_solve would result in a division by zero. If you still want to "
               "perform the factorization, consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)");
  return {f.LU, f.pivots};
}

Tensor lu_solve(const Tensor& LU, const Tensor& pivots, const Tensor& B, bool left, bool adjoint) {
  need_square("linalg.lu_solve", LU, "LU");
  need_matrix("linalg.lu_solve", B, "B");
  if (pivots.dtype() != DType::i32) throw fail("linalg.lu_solve: pivots should be a Tensor of scalar type Int");
  Tensor Bm = left ? B : B.transpose(-2, -1);  // X A = B  <=>  A^T X^T = B^T
  const bool adj = left ? adjoint : !adjoint;
  const Shape batch = broadcast_batch("linalg.lu_solve", batch_of(LU, 2), batch_of(Bm, 2));
  const int64_t n = LU.size(-1), k = Bm.size(-1);
  if (Bm.size(-2) != n)
    throw fail("linalg.lu_solve: Incompatible shapes of A and B for the equation " +
               std::string(left ? "AX = B" : "XA = B") + " (" + std::to_string(n) + "x" + std::to_string(n) + " and " +
               std::to_string(B.size(-2)) + "x" + std::to_string(B.size(-1)) + ")");
  Shape pb = batch;
  pb.push_back(n);
  Tensor X = lu_solve_op(LU.detach().expand(cat_shape(batch, {n, n})), pivots.expand(pb),
                         Bm.detach().expand(cat_shape(batch, {n, k})).to(LU.dtype()), adj);
  return left ? X : X.transpose(-2, -1);
}

Tensor solve(const Tensor& A, const Tensor& B, bool left) {
  need_square("linalg.solve", A);
  if (B.dim() < 1) throw fail("linalg.solve: The input tensor B must have at least 1 dimensions.");
  if (!is_floating(B.dtype()))
    throw fail("linalg.solve: Expected a floating point or complex tensor as input. Got " + torch_dtype(B.dtype()));
  // torch's vector case: B (*, n) with A's shape without its last dim (or B 1-D).
  const Shape as = A.shape(), bs = B.shape();
  const bool vec = B.dim() == 1 || (B.dim() == A.dim() - 1 && bs == Shape(as.begin(), as.end() - 1));
  if (vec) {
    if (!left)
      throw fail(
          "linalg.solve: Vector broadcasting of the left hand side is not supported for left=False. In this "
          "case linalg.solve is equivalent to B / A.squeeze(-1)");
    return solve_matrices("linalg.solve", A, B.unsqueeze(-1)).squeeze(-1);
  }
  if (left) return solve_matrices("linalg.solve", A, B);
  if (B.size(-1) != A.size(-1))
    throw fail("linalg.solve: Incompatible shapes of A and B for the equation XA = B (" + std::to_string(A.size(-2)) +
               "x" + std::to_string(A.size(-1)) + " and " + std::to_string(B.size(-2)) + "x" +
               std::to_string(B.size(-1)) + ")");
  return solve_matrices("linalg.solve", A.transpose(-2, -1), B.transpose(-2, -1)).transpose(-2, -1);
}

Tensor inv(const Tensor& A_) {
  need_square("linalg.inv", A_);
  Tensor A = A_;
  GN_AUTOCAST("linalg_inv", &A);
  const int64_t n = A.size(-1);
  const LUFactorEx f = lu(A);
  const Failure bad = first_failure(f.info);
  if (bad.batch >= 0)
    throw LinAlgError("linalg.inv: " + bad.prefix + "The diagonal element " + std::to_string(bad.info) +
                      " is zero, the inversion could not be completed because the input matrix is singular.");
  Tensor I = eye(n, 0, {.dtype = A.dtype(), .device = A.device()}).expand(A.shape());
  Tensor X = lu_solve_op(f.LU, f.pivots, I, false);
  if (auto node = record("linalg_inv", R::linalg_inv, {A}, X)) node->save("out", X.detach());
  return X;
}

namespace {
// det and slogdet share the factorization; `log` picks slogdet's (sign, log|det|).
struct DetParts {
  Tensor sign, logabs, det;
  LUFactorEx f;
};
DetParts det_parts(const Tensor& A, bool log) {
  NoGradGuard ng;
  DetParts p;
  p.f = lu(A);
  Tensor d = diagonal(p.f.LU);
  Tensor s = pivot_sign(p.f.pivots, A.dtype());
  if (log) {
    p.sign = s * d.sign().prod(-1);
    p.logabs = d.abs().log().sum(-1);
  } else {
    p.det = s * d.prod(-1);
  }
  return p;
}
}  // namespace

Tensor det(const Tensor& A_) {
  need_square("linalg.det", A_);
  Tensor A = A_;
  GN_AUTOCAST("linalg_det", &A);
  DetParts p = det_parts(A, false);
  if (auto node = record("linalg_det", R::linalg_det, {A}, p.det)) {
    node->save("a", A.detach());
    node->save("lu", p.f.LU);
    node->save("pivots", p.f.pivots);
    node->save("out", p.det.detach());
  }
  return p.det;
}

std::pair<Tensor, Tensor> slogdet(const Tensor& A_) {
  need_square("linalg.slogdet", A_);
  Tensor A = A_;
  GN_AUTOCAST("linalg_slogdet", &A);
  DetParts p = det_parts(A, true);
  if (auto node = record("linalg_slogdet", R::linalg_slogdet, {A}, p.logabs)) {
    node->save("lu", p.f.LU);
    node->save("pivots", p.f.pivots);
  }
  return {p.sign, p.logabs};
}

Tensor logdet(const Tensor& A) {
  auto [sign, logabs] = slogdet(A);
  Tensor nan = full({}, std::nan(""), {.dtype = logabs.dtype(), .device = logabs.device()});
  Tensor ninf = full({}, -INFINITY, {.dtype = logabs.dtype(), .device = logabs.device()});
  return where(sign < Scalar(0), nan, where(sign == Scalar(0), ninf, logabs));
}

std::pair<Tensor, Tensor> cholesky_ex(const Tensor& A_, bool upper) {
  need_square("linalg.cholesky", A_);
  Tensor A = A_;
  GN_AUTOCAST("cholesky", &A);
  const gn_op* op = GN_OP_HANDLE("cholesky");
  const auto attrs = {gn_attr_int(upper ? 1 : 0)};
  auto r = call(op, {&A}, attrs, 2);
  if (auto node = record("cholesky", R::cholesky, {A}, r[0])) {
    node->save("out", r[0].detach());
    node->keep_attrs(op, attrs);
  }
  return {r[0], r[1]};
}

Tensor cholesky(const Tensor& A, bool upper) {
  auto [L, info] = cholesky_ex(A, upper);
  const Failure bad = first_failure(info);
  if (bad.batch >= 0)
    throw LinAlgError("linalg.cholesky: " + bad.prefix +
                      "The factorization could not be completed because the input is not positive-definite (the "
                      "leading minor of order " +
                      std::to_string(bad.info) + " is not positive-definite).");
  return L;
}

std::pair<Tensor, Tensor> qr(const Tensor& A_, const std::string& mode) {
  if (mode != "reduced" && mode != "complete" && mode != "r")
    throw fail("qr received unrecognized mode '" + mode +
               "' but expected one of 'reduced' (default), 'r', or 'complete'");
  need_matrix("linalg.qr", A_);
  Tensor A = A_;
  GN_AUTOCAST("qr", &A);
  const gn_op* op = GN_OP_HANDLE("qr");
  const auto attrs = {gn_attr_int(mode == "complete" ? 1 : 0)};
  auto r = call(op, {&A}, attrs, 2);
  if (mode == "r") {
    Tensor R_ = r[1];
    if (autograd::grad_enabled() && A.requires_grad())
      R_ = packed("qr", R::qr, op, attrs, A, {r[0], r[1]}, {"q", "r"})[1];
    return {zeros({0}, {.dtype = A.dtype(), .device = A.device()}), R_};
  }
  auto out = packed("qr", R::qr, op, attrs, A, {r[0], r[1]}, {"q", "r"});
  return {out[0], out[1]};
}

SVD svd(const Tensor& A_, bool full_matrices) {
  need_matrix("linalg.svd", A_);
  Tensor A = A_;
  GN_AUTOCAST("svd", &A);
  const gn_op* op = GN_OP_HANDLE("svd");
  const auto attrs = {gn_attr_int(full_matrices ? 1 : 0), gn_attr_int(1)};
  auto r = call(op, {&A}, attrs, 3);
  auto out = packed("svd", R::svd, op, attrs, A, {r[0], r[1], r[2]}, {"u", "s", "vh"});
  return {out[0], out[1], out[2]};
}

Tensor svdvals(const Tensor& A_) {
  need_matrix("linalg.svdvals", A_);
  if (autograd::grad_enabled() && A_.requires_grad()) return svd(A_, false).S;  // the vectors for the gradient
  Tensor A = A_;
  GN_AUTOCAST("svd", &A);
  return call(GN_OP_HANDLE("svd"), {&A}, {gn_attr_int(0), gn_attr_int(0)}, 3)[1];
}

std::pair<Tensor, Tensor> eigh(const Tensor& A_, const std::string& uplo) {
  if (uplo != "L" && uplo != "U" && uplo != "l" && uplo != "u")
    throw fail("Expected UPLO argument to be 'L' or 'U', but got " + uplo);
  need_square("linalg.eigh", A_);
  Tensor A = A_;
  GN_AUTOCAST("eigh", &A);
  const gn_op* op = GN_OP_HANDLE("eigh");
  const auto attrs = {gn_attr_int(uplo == "U" || uplo == "u" ? 1 : 0)};
  auto r = call(op, {&A}, attrs, 2);
  auto out = packed("eigh", R::eigh, op, attrs, A, {r[0], r[1]}, {"l", "q"});
  return {out[0], out[1]};
}

Tensor eigvalsh(const Tensor& A, const std::string& uplo) { return eigh(A, uplo).first; }

Tensor solve_triangular(const Tensor& A_, const Tensor& B_, bool upper, bool left, bool unitriangular) {
  need_square("linalg.solve_triangular", A_);
  need_matrix("linalg.solve_triangular", B_, "B");
  Tensor A = A_, B = B_;
  GN_AUTOCAST("solve_triangular", &A, &B);
  // X A = B  <=>  A^T X^T = B^T: A read as it is, with the transpose flag.
  Tensor Bm = left ? B : B.transpose(-2, -1);
  const int64_t n = A.size(-1), k = Bm.size(-1);
  if (Bm.size(-2) != n)
    throw fail("linalg.solve_triangular: Incompatible shapes of A and B for the equation " +
               std::string(left ? "AX = B" : "XA = B") + " (" + std::to_string(A.size(-2)) + "x" + std::to_string(n) +
               " and " + std::to_string(B.size(-2)) + "x" + std::to_string(B.size(-1)) + ")");
  const Shape batch = broadcast_batch("linalg.solve_triangular", batch_of(A, 2), batch_of(Bm, 2));
  Tensor Ab = A.expand(cat_shape(batch, {n, n})), Bb = Bm.expand(cat_shape(batch, {n, k}));
  const gn_op* op = GN_OP_HANDLE("solve_triangular");
  const auto attrs = {gn_attr_int(upper ? 1 : 0), gn_attr_int(left ? 0 : 1), gn_attr_int(unitriangular ? 1 : 0)};
  Tensor X = call1(op, {&Ab, &Bb}, attrs);
  if (auto node = record("solve_triangular", R::solve_triangular, {Ab, Bb}, X)) {
    node->save("a", Ab.detach());
    node->save("out", X.detach());
    node->keep_attrs(op, attrs);
  }
  return left ? X : X.transpose(-2, -1);
}

}  // namespace genesis::linalg

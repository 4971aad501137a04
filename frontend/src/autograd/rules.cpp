// rules.cpp - every gradient rule, one short function per op.
//
// A rule gets the node (its saved tensors and attributes, read by name, and
// the inputs' metadata) and the gradient g of the op's output; it returns one
// gradient per input (an undefined Tensor where there is none).  Rules run
// under NoGradGuard and may return gradients of a broadcast shape or a
// promoted dtype: the engine sums and casts them back to each input
// (engine.cpp, conform).
#include <cmath>

#include "../internal.h"
#include "matmul_grad.h"
#include "rules.h"

namespace genesis::autograd::rules {

using V = std::vector<Tensor>;

namespace {

// True when input i receives a gradient (skips work for constants/scalars).
bool needs(const Node& n, size_t i) { return i < n.next.size() && n.next[i] != nullptr; }

// The reduced dims of a reduction node (attribute "dims"; [] = all).
Dims reduced_dims(const Node& n) { return Dims(n.attr_ints("dims")); }

// Shape of the reduced input with reduced dims kept as 1.
Shape kept_shape(const Node& n) {
  Shape s = n.inputs[0].shape;
  const int64_t r = static_cast<int64_t>(s.size());
  const std::vector<int64_t> dims = n.attr_ints("dims");
  if (dims.empty()) return Shape(s.size(), 1);
  for (int64_t d : dims) s[(d % r + r) % r] = 1;
  return s;
}

// A reduced tensor (g or y) reshaped so it broadcasts against the input.
Tensor keep(const Node& n, const Tensor& t) { return t.reshape(kept_shape(n)); }

// Number of elements each output of a reduction summarised.
double reduced_count(const Node& n) {
  double in = 1, out = 1;
  for (int64_t s : n.inputs[0].shape) in *= static_cast<double>(s);
  for (int64_t s : kept_shape(n)) out *= static_cast<double>(s);
  return in / out;
}

// Whether the space-separated list `saves` (a derivatives.def column) names `word`.
constexpr bool names(std::string_view saves, std::string_view word) {
  for (size_t i = 0; i < saves.size();) {
    size_t j = saves.find(' ', i);
    if (j == std::string_view::npos) j = saves.size();
    if (saves.substr(i, j - i) == word) return true;
    i = j + 1;
  }
  return false;
}

const Tensor kNoTensor;

}  // namespace

// ---- elementwise unary: saved "x" and/or "out", as the row's `saves` names
// The GN_UNARY_GRAD rows of derivatives.def: {formula} of g, x and out.
#define GN_UNARY_GRAD(op, saves, policy, formula)                         \
  V op(Node& n, const Tensor& g) {                                        \
    const Tensor& x = names(saves, "x") ? n.saved("x") : kNoTensor;       \
    const Tensor& out = names(saves, "out") ? n.saved("out") : kNoTensor; \
    (void)x;                                                              \
    (void)out;                                                            \
    return {formula};                                                     \
  }
#include "derivatives.def"

V silu(Node& n, const Tensor& g) {
  const Tensor& x = n.saved("x");
  Tensor s = x.sigmoid();
  return {g * s * (1 + x * (1 - s))};
}
V gelu(Node& n, const Tensor& g) {
  const Tensor& x = n.saved("x");
  if (n.attr_int("approximate")) {  // tanh form: 0.5*x*(1+tanh(u)), u = c*(x + 0.044715x^3)
    const double c = std::sqrt(2.0 / M_PI);
    Tensor t = ((x + x.pow(3) * 0.044715) * c).tanh();
    Tensor du = (1 + x.square() * (3 * 0.044715)) * c;
    return {g * (0.5 * (1 + t) + 0.5 * x * (1 - t.square()) * du)};
  }
  // Exact: Phi(x) + x*phi(x).  No erf op, so Phi = gelu(x)/x, with its Taylor
  // series 1/2 + x/sqrt(2*pi) near 0 where the division loses precision.
  const double inv_sqrt_2pi = 1.0 / std::sqrt(2 * M_PI);
  Tensor phi = (x.square() * -0.5).exp() * inv_sqrt_2pi;
  Tensor small = x.abs() < 1e-3;
  Tensor safe_x = where(small, ones_like(x), x);
  Tensor Phi = where(small, 0.5 + x * inv_sqrt_2pi, n.saved("out") / safe_x);
  return {g * (Phi + x * phi)};
}
V clamp(Node& n, const Tensor& g) {  // gradient passes inside [lo, hi]
  const Tensor& x = n.saved("x");
  return {g * ((x >= n.saved("lo")) * (x <= n.saved("hi")))};
}

// ---- elementwise binary: saved "a", "b", "out" (what the row names); add/sub keep "alpha"
V pow_scalar(Node& n, const Tensor& g) {
  const double p = n.attr_float("exponent");
  return {g * n.saved("a").pow(p - 1) * p};
}
V pow(Node& n, const Tensor& g) {
  const Tensor &a = n.saved("a"), &b = n.saved("b"), &y = n.saved("out");
  return {needs(n, 0) ? g * b * a.pow(b - 1) : Tensor(), needs(n, 1) ? g * y * a.log() : Tensor()};
}
V add(Node& n, const Tensor& g) {
  if (!needs(n, 1)) return {g, Tensor()};
  const double alpha = n.attr_float("alpha");
  return {g, alpha == 1 ? g : g * alpha};
}
V sub(Node& n, const Tensor& g) { return {g, needs(n, 1) ? g * -n.attr_float("alpha") : Tensor()}; }
V mul(Node& n, const Tensor& g) {
  return {needs(n, 0) ? g * n.saved("b") : Tensor(), needs(n, 1) ? g * n.saved("a") : Tensor()};
}
V div(Node& n, const Tensor& g) {
  const Tensor &b = n.saved("b"), &y = n.saved("out");
  return {needs(n, 0) ? g / b : Tensor(), needs(n, 1) ? -g * y / b : Tensor()};
}
V maximum(Node& n, const Tensor& g) {  // ties split the gradient in half, as torch
  const Tensor &a = n.saved("a"), &b = n.saved("b");
  Tensor w = (a > b) + (a == b) * 0.5;
  return {g * w, g * (1 - w)};
}
V minimum(Node& n, const Tensor& g) {
  const Tensor &a = n.saved("a"), &b = n.saved("b");
  Tensor w = (a < b) + (a == b) * 0.5;
  return {g * w, g * (1 - w)};
}
V where(Node& n, const Tensor& g) {  // inputs (cond, a, b)
  Tensor z = zeros({}, {.dtype = g.dtype(), .device = g.device()});
  const Tensor& c = n.saved("cond");
  return {Tensor(), needs(n, 1) ? genesis::where(c, g, z) : Tensor(), needs(n, 2) ? genesis::where(c, z, g) : Tensor()};
}
V matmul(Node& n, const Tensor& g) {
  // a (..., M, K) @ b (..., K, N) = g (..., M, N), 1-D operands promoted as matmul does.
  const Tensor &a = n.saved("a"), &b = n.saved("b");
  const auto [A, B, G] = matmul_operands(a, b, g);
  const gn_op* mm = GN_OP_HANDLE("matmul");
  Tensor ga, gb;
  if (needs(n, 0)) {  // G @ B^T: (..., M, K)
    ga = detail::call1(mm, {&G, &B}, {gn_attr_int(0), gn_attr_int(1)});
    if (a.dim() == 1) ga = ga.squeeze(-2);
  }
  if (needs(n, 1)) {  // A^T @ G: (..., K, N)
    if (A.dim() == 2 && B.dim() == 2 && !B.is_contiguous() && B.t().is_contiguous()) {
      // b is a transposed dense matrix (linear's weight.t()): compute (G^T @ A)^T
      // so that the gradient reaching the weight through t() is dense, not a
      // transposed view that accumulation would copy element by element
      // (torch's mm_mat2_backward does the same).
      gb = detail::call1(mm, {&G, &A}, {gn_attr_int(1), gn_attr_int(0)}).t();
    } else {
      gb = detail::call1(mm, {&A, &G}, {gn_attr_int(1), gn_attr_int(0)});
    }
    if (b.dim() == 1) gb = gb.squeeze(-1);
  }
  return {ga, gb};
}

// ---- reductions: attributes "dims" (and "correction" or "p"); saved "x", "out"
V sum(Node& n, const Tensor& g) { return {keep(n, g).expand(n.inputs[0].shape)}; }
V mean(Node& n, const Tensor& g) { return {keep(n, g).expand(n.inputs[0].shape) / reduced_count(n)}; }
V amax(Node& n, const Tensor& g) {  // max and min: split evenly among the extreme elements
  Tensor hit = (n.saved("x") == keep(n, n.saved("out"))).to(g.dtype());
  return {hit * keep(n, g) / hit.sum(reduced_dims(n), true)};
}
V var(Node& n, const Tensor& g) {  // 2 (x - mean) / (N - correction)
  const Tensor& x = n.saved("x");
  Tensor mu = keep(n, x.mean(reduced_dims(n), true));
  return {keep(n, g) * (x - mu) * (2 / (reduced_count(n) - n.attr_float("correction")))};
}
V std(Node& n, const Tensor& g) {  // (x - mean) / ((N - correction) std)
  const Tensor& x = n.saved("x");
  Tensor mu = keep(n, x.mean(reduced_dims(n), true));
  return {keep(n, g) * (x - mu) / (keep(n, n.saved("out")) * (reduced_count(n) - n.attr_float("correction")))};
}
V logsumexp(Node& n, const Tensor& g) { return {keep(n, g) * (n.saved("x") - keep(n, n.saved("out"))).exp()}; }
V norm(Node& n, const Tensor& g) {  // sign(x) |x|^(p-1) / y^(p-1)
  const Tensor &x = n.saved("x"), y = keep(n, n.saved("out"));
  const double p = n.attr_float("p");
  if (p == 2) return {keep(n, g) * x / y};
  if (std::isinf(p) || p == 0) throw Error(GN_ERR_UNSUPPORTED, "[norm] gradient only for finite p > 0");
  return {keep(n, g) * x.sign() * x.abs().pow(p - 1) / y.pow(p - 1)};
}

// ---- softmax family and fused NN ops (their backward ops live in the core)
V softmax(Node& n, const Tensor& g) {
  const gn_op* op = GN_OP_HANDLE("softmax_backward");
  return detail::call(op, {g, n.saved("out")}, n.attrs_for(op), 1);
}
V log_softmax(Node& n, const Tensor& g) {
  const gn_op* op = GN_OP_HANDLE("log_softmax_backward");
  return detail::call(op, {g, n.saved("out")}, n.attrs_for(op), 1);
}
V layer_norm(Node& n, const Tensor& g) {  // saved "x", "mean", "rstd", ["weight"]
  std::vector<Tensor> in = {g, n.saved("x"), n.saved("mean"), n.saved("rstd")};
  if (n.has_saved("weight")) in.push_back(n.saved("weight"));
  const gn_op* op = GN_OP_HANDLE("layer_norm_backward");
  auto r = detail::call(op, in, n.attrs_for(op), 3);
  return {r[0], n.next.size() > 1 ? r[1] : Tensor(), n.next.size() > 2 ? r[2] : Tensor()};
}
V rms_norm(Node& n, const Tensor& g) {  // saved "x", "rstd", ["weight"]
  std::vector<Tensor> in = {g, n.saved("x"), n.saved("rstd")};
  if (n.has_saved("weight")) in.push_back(n.saved("weight"));
  auto r = detail::call(GN_OP_HANDLE("rms_norm_backward"), in, {}, 2);
  return {r[0], n.next.size() > 1 ? r[1] : Tensor()};
}
V cross_entropy(Node& n, const Tensor& g) {
  const gn_op* op = GN_OP_HANDLE("cross_entropy_backward");
  return {detail::call(op, {g, n.saved("logits"), n.saved("target"), n.saved("lse")}, n.attrs_for(op), 1)[0], Tensor()};
}
V embedding(Node& n, const Tensor& g) {  // inputs (weight (V, D), ids)
  Tensor gw =
      detail::call1(GN_OP_HANDLE("embedding_backward"), {&g, &n.saved("ids")}, {gn_attr_int(n.inputs[0].shape.at(0))});
  return {gw, Tensor()};
}

// ---- copies and views
V identity(Node&, const Tensor& g) { return {g}; }  // clone, contiguous, to(dtype), expand
V to_device(Node& n, const Tensor& g) { return {g.to(n.inputs[0].device)}; }
V reshape(Node& n, const Tensor& g) { return {g.reshape(n.inputs[0].shape)}; }  // view, squeeze, flatten...
V permute(Node& n, const Tensor& g) {  // attribute "dims": the permutation, inverted here
  const std::vector<int64_t> dims = n.attr_ints("dims");
  const int64_t r = static_cast<int64_t>(dims.size());
  Shape inv(dims.size());
  for (int64_t i = 0; i < r; ++i) inv[(dims[i] % r + r) % r] = i;
  return {g.permute(inv)};
}
V transpose(Node& n, const Tensor& g) { return {g.transpose(n.attr_int("dim0"), n.attr_int("dim1"))}; }
V slice(Node& n, const Tensor& g) {  // scatter g into zeros (slice and split)
  Tensor z = zeros(n.inputs[0].shape, {.dtype = g.dtype(), .device = g.device()});
  z.slice(n.attr_int("dim"), n.attr_int("start"), n.attr_int("stop"), n.attr_int("step")).copy_(g);
  return {z};
}
V select(Node& n, const Tensor& g) {
  Tensor z = zeros(n.inputs[0].shape, {.dtype = g.dtype(), .device = g.device()});
  z.select(n.attr_int("dim"), n.attr_int("index")).copy_(g);
  return {z};
}

// ---- convolution, pooling, attention and fused activations (genesis::nn::functional)
// The backward ops take the forward's attributes by name (Node::attrs_for).
V conv2d(Node& n, const Tensor& g) {  // inputs (x, w, [bias])
  const gn_op* op = GN_OP_HANDLE("conv2d_backward");
  auto r = detail::call(op, {g, n.saved("x"), n.saved("w")}, n.attrs_for(op), 3);
  return {r[0], r[1], n.next.size() > 2 ? r[2] : Tensor()};
}
V max_pool2d(Node& n, const Tensor& g) {
  const gn_op* op = GN_OP_HANDLE("max_pool2d_backward");
  return detail::call(op, {g, n.saved("x"), n.saved("indices")}, n.attrs_for(op), 1);
}
V avg_pool2d(Node& n, const Tensor& g) {
  const gn_op* op = GN_OP_HANDLE("avg_pool2d_backward");
  return detail::call(op, {g, n.saved("x")}, n.attrs_for(op), 1);
}
V sdpa(Node& n, const Tensor& g) {  // inputs (q, k, v, [mask])
  std::vector<Tensor> in = {g, n.saved("q"), n.saved("k"), n.saved("v"), n.saved("out"), n.saved("lse")};
  if (n.has_saved("mask")) in.push_back(n.saved("mask"));
  const gn_op* op = GN_OP_HANDLE("scaled_dot_product_attention_backward");
  auto r = detail::call(op, in, n.attrs_for(op), 3);
  if (n.next.size() > 3) r.push_back(Tensor());  // no gradient for the mask
  return r;
}
V rope(Node& n, const Tensor& g) {  // inputs (x, cos, sin)
  return {detail::call1(GN_OP_HANDLE("rope_backward"), {&g, &n.saved("cos"), &n.saved("sin")}), Tensor(), Tensor()};
}
V swiglu(Node& n, const Tensor& g) {  // inputs (gate, up)
  return detail::call(GN_OP_HANDLE("swiglu_backward"), {&g, &n.saved("gate"), &n.saved("up")}, {}, 2);
}

// ---- indexing and joining: attribute "dim", saved "index"
V gather(Node& n, const Tensor& g) {  // inputs (x, index): scatter-add g back
  Tensor z = zeros(n.inputs[0].shape, {.dtype = g.dtype(), .device = g.device()});
  return {detail::call1(GN_OP_HANDLE("scatter_add"), {&z, &n.saved("index"), &g}, {gn_attr_int(n.attr_int("dim"))}),
          Tensor()};
}
V index_select(Node& n, const Tensor& g) {  // inputs (x, index)
  Tensor z = zeros(n.inputs[0].shape, {.dtype = g.dtype(), .device = g.device()});
  return {detail::call1(GN_OP_HANDLE("index_add"), {&z, &n.saved("index"), &g},
                        {gn_attr_int(n.attr_int("dim")), gn_attr_float(1)}),
          Tensor()};
}
V cat(Node& n, const Tensor& g) {  // each input gets its slice of g
  V r;
  int64_t off = 0;
  const int64_t dim = n.attr_int("dim");
  for (const InputMeta& m : n.inputs) {
    const int64_t len = m.shape.at(detail::wrap_dim(dim, static_cast<int64_t>(m.shape.size())));
    r.push_back(g.slice(dim, off, off + len));
    off += len;
  }
  return r;
}
V stack(Node& n, const Tensor& g) {  // input i gets g.select(dim, i)
  V r;
  const int64_t dim = n.attr_int("dim");
  for (size_t i = 0; i < n.inputs.size(); ++i) r.push_back(g.select(dim, static_cast<int64_t>(i)));
  return r;
}

// ---- ops added with the full-coverage gradcheck
V prod(Node& n, const Tensor& g) {
  // dy/dx_i = prod of the others.  Without zeros that is y / x_i; with one
  // zero in a slice only the zero gets the product of the non-zeros; with two
  // or more every gradient is 0.
  const Tensor &x = n.saved("x"), y = keep(n, n.saved("out"));
  const Dims dims = reduced_dims(n);
  Tensor zero = x == 0;
  Tensor nz = where(zero, ones_like(x), x);
  Tensor zero_count = keep(n, zero.to(x.dtype()).sum(dims, true));
  Tensor prod_nonzero = keep(n, nz.prod(dims, true));
  Tensor z = zeros({}, {.dtype = x.dtype(), .device = x.device()});
  Tensor at_zero = where(zero_count == 1, prod_nonzero, z);
  return {keep(n, g) * where(zero, at_zero, y / nz)};
}
V bmm(Node& n, const Tensor& g) {  // g (B, M, N)
  const Tensor &a = n.saved("a"), &b = n.saved("b");
  const bool ta = n.attr_int("trans_a") != 0, tb = n.attr_int("trans_b") != 0;
  const gn_op* op = GN_OP_HANDLE("bmm");
  auto mm = [op](const Tensor& l, const Tensor& r, int ta_, int tb_) {
    return detail::call1(op, {&l, &r}, {gn_attr_int(ta_), gn_attr_int(tb_)});
  };
  Tensor ga, gb;
  // out = A B with A = a or a^T, B = b or b^T: dA = g B^T, dB = A^T g, then
  // transposed back when the operand was stored transposed.
  if (needs(n, 0)) ga = !ta ? (!tb ? mm(g, b, 0, 1) : mm(g, b, 0, 0)) : (!tb ? mm(b, g, 0, 1) : mm(b, g, 1, 1));
  if (needs(n, 1)) gb = !tb ? (!ta ? mm(a, g, 1, 0) : mm(a, g, 0, 0)) : (!ta ? mm(g, a, 1, 0) : mm(g, a, 1, 1));
  return {ga, gb};
}
V scatter(Node& n, const Tensor& g) {  // inputs (x, index, src)
  // Overwritten positions get no gradient in x; src gets g at the positions it wrote.
  const Tensor& idx = n.saved("index");
  const int64_t dim = n.attr_int("dim");
  Tensor gx, gs;
  if (needs(n, 0)) gx = genesis::scatter(g, dim, idx, zeros(idx.shape(), {.dtype = g.dtype(), .device = g.device()}));
  if (needs(n, 2)) gs = g.gather(dim, idx);
  return {gx, Tensor(), gs};
}
V scatter_add(Node& n, const Tensor& g) {  // inputs (x, index, src)
  return {g, Tensor(), needs(n, 2) ? g.gather(n.attr_int("dim"), n.saved("index")) : Tensor()};
}
V index_add(Node& n, const Tensor& g) {  // inputs (x, index, src); src gets alpha g
  Tensor gs;
  if (needs(n, 2)) {
    gs = g.index_select(n.attr_int("dim"), n.saved("index"));
    const double alpha = n.attr_float("alpha");
    if (alpha != 1) gs = gs * alpha;
  }
  return {g, Tensor(), gs};
}
V masked_fill(Node& n, const Tensor& g) {  // inputs (x, mask): filled positions get 0
  return {g.masked_fill(n.saved("mask"), 0), Tensor()};
}
V triu(Node& n, const Tensor& g) { return {g.triu(n.attr_int("diagonal"))}; }
V tril(Node& n, const Tensor& g) { return {g.tril(n.attr_int("diagonal"))}; }
V take_along(Node& n, const Tensor& g) {  // topk/sort values: scatter g back to where they came from
  Tensor z = zeros(n.inputs[0].shape, {.dtype = g.dtype(), .device = g.device()});
  return {genesis::scatter_add(z, n.attr_int("dim"), n.saved("indices"), g)};
}

V linear(Node& n, const Tensor& g) {  // y = x @ w^T: inputs (x (*, in), w (out, in))
  const Tensor &x = n.saved("x"), &w = n.saved("w");
  const gn_op* mm = GN_OP_HANDLE("matmul");
  Tensor gx, gw;
  if (needs(n, 0)) gx = detail::call1(mm, {&g, &w});  // (*, out) @ (out, in)
  if (needs(n, 1)) {                                  // g^T @ x over every leading dim: (out, in), dense, as the weight
    const int64_t out = w.size(0), in = w.size(1);
    Tensor g2 = g.reshape({-1, out}), x2 = x.reshape({-1, in});
    gw = detail::call1(mm, {&g2, &x2}, {gn_attr_int(1), gn_attr_int(0)});
  }
  return {gx, gw};
}

// ---- the op -> rule table: the GN_UNARY_GRAD and GN_GRAD rows of derivatives.def
const std::vector<OpRule>& rule_table() {
  static const std::vector<OpRule> table = {
#define GN_UNARY_GRAD(op, saves, policy, formula) {#op, op},
#define GN_GRAD(op, rule, saves, policy) {#op, rule},
#include "derivatives.def"
  };
  return table;
}

namespace {
constexpr UnaryGrad kUnaryGrads[] = {
#define GN_UNARY_GRAD(op, saves, policy, formula) {#op, op, names(saves, "x"), names(saves, "out")},
#include "derivatives.def"
};
}  // namespace

const UnaryGrad* find_unary_grad(std::string_view op) {
  for (const UnaryGrad& u : kUnaryGrads)
    if (op == u.op) return &u;
  return nullptr;
}

}  // namespace genesis::autograd::rules

namespace genesis::autograd {
std::vector<std::string> differentiable_ops() {
  std::vector<std::string> names;
  for (const auto& r : rules::rule_table()) names.emplace_back(r.op);
  return names;
}
}  // namespace genesis::autograd

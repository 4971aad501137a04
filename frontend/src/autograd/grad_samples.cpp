// grad_samples.cpp - one finite-difference case per differentiable op, on any
// device and in float64 or float32: what `genesis test-ops --mode grad` runs on
// a backend, and frontend_gradcheck_test runs beside its hand-written cases.
//
// The GN_UNARY_GRAD rows of derivatives.def get a generic case (inputs in
// [0.5, 1.5], inside every such op's domain); every other differentiable op
// has one entry below, with small shapes and attributes away from defaults
// where a rule reads them.  Values are random but seeded, and the Philox
// generator gives the same inputs on every backend.
#include <cmath>

#include "genesis/linalg.hpp"
#include "genesis/nn/functional.hpp"
#include "genesis/tensor_algorithms.hpp"
#include "rules.h"

namespace genesis::autograd {

namespace {

using V = std::vector<Tensor>;
namespace F = nn::functional;

// Leaves that require grad: standard normal, or uniform in [0.5, 1.5] (pos).
Tensor leaf(Shape s, const Options& o) { return randn(s, o).detach().requires_grad_(); }
Tensor pos(Shape s, const Options& o) { return (rand(s, o) + 0.5).detach().requires_grad_(); }
// Integer (index) inputs on the sample's device.
Tensor ids(const std::vector<int64_t>& v, Shape s, const Options& o) { return tensor(v, s, {.device = o.device}); }

// A sample whose inputs are leaves of these shapes (pos: positive ones).
GradSample plain(const char* op, std::vector<Shape> shapes, std::function<Tensor(const V&)> fn, bool positive = false) {
  return {op,
          [shapes, positive](const Options& o) {
            V in;
            for (const Shape& s : shapes) in.push_back(positive ? pos(s, o) : leaf(s, o));
            return in;
          },
          std::move(fn)};
}

std::vector<GradSample> make_samples() {
  std::vector<GradSample> s;
  for (const rules::OpRule& r : rules::rule_table())
    if (rules::find_unary_grad(r.op)) {
      const std::string op = r.op;
      s.push_back(plain(
          r.op, {{3, 4}}, [op](const V& x) { return call_unary(op, x[0]); }, true));
    }
  // ---- elementwise
  s.push_back(plain("gelu", {{3, 4}}, [](const V& x) { return x[0].gelu() + x[0].gelu(true); }));
  s.push_back(plain("silu", {{3, 4}}, [](const V& x) { return x[0].silu(); }));
  {
    // Through the other float dtype and back; float64 -> float32 rounds, so looser tolerances.
    GradSample c = plain("cast", {{3}}, [](const V& x) {
      const DType other = x[0].dtype() == DType::f64 ? DType::f32 : DType::f64;
      return x[0].to(other).to(x[0].dtype()) * x[0];
    });
    c.rounds = true;
    s.push_back(c);
  }
  s.push_back(plain("copy", {{3, 4}}, [](const V& x) { return x[0].clone() * x[0]; }));
  s.push_back(plain("clamp", {{3, 4}}, [](const V& x) { return x[0].clamp(-0.5, 0.5); }));
  s.push_back(plain("add", {{2, 3}, {3}}, [](const V& x) { return x[0].add(x[1], 2.5); }));
  s.push_back(plain("sub", {{2, 3}, {2, 1}}, [](const V& x) { return x[0].sub(x[1], 0.5); }));
  s.push_back(plain("mul", {{2, 3, 4}, {1, 4}}, [](const V& x) { return x[0] * x[1]; }));
  s.push_back(plain(
      "div", {{3, 4}, {4}}, [](const V& x) { return x[0] / x[1]; }, true));
  s.push_back(plain(
      "pow", {{3, 4}, {4}}, [](const V& x) { return x[0].pow(x[1]) + x[0].pow(3); }, true));
  s.push_back(plain("maximum", {{3, 4}, {4}}, [](const V& x) { return x[0].maximum(x[1]); }));
  s.push_back(plain("minimum", {{3, 4}, {3, 1}}, [](const V& x) { return x[0].minimum(x[1]); }));
  s.push_back({"where",  // a fixed condition: one computed from x could flip under a step
               [](const Options& o) {
                 return V{ids({1, 0, 0, 1}, {4}, o) > 0, leaf({3, 4}, o), leaf({4}, o)};
               },
               [](const V& x) { return where(x[0], x[1], x[2]); }});
  // ---- reductions
  s.push_back(plain("sum", {{2, 3, 4}}, [](const V& x) { return x[0].sum({0, 2}); }));
  s.push_back(plain("mean", {{2, 3, 4}}, [](const V& x) { return x[0].mean(1, true); }));
  s.push_back(plain("prod", {{3, 4}}, [](const V& x) { return x[0].prod(1); }));
  s.push_back(plain("max", {{2, 3, 4}}, [](const V& x) { return x[0].max(1, true); }));
  s.push_back(plain("min", {{2, 3, 4}}, [](const V& x) { return x[0].min({0, 2}); }));
  s.push_back(plain("var", {{2, 3, 4}}, [](const V& x) { return x[0].var(1, 0, true); }));
  s.push_back(plain("std", {{3, 5}}, [](const V& x) { return x[0].std(-1); }));
  s.push_back(plain("logsumexp", {{2, 3, 4}}, [](const V& x) { return x[0].logsumexp(1); }));
  s.push_back(plain("norm", {{3, 4}}, [](const V& x) { return x[0].norm(3, 1); }));
  // ---- softmax, matmul, fused NN ops
  s.push_back(plain("softmax", {{2, 3, 5}}, [](const V& x) { return x[0].softmax(1); }));
  s.push_back(plain("log_softmax", {{4, 5}}, [](const V& x) { return x[0].log_softmax(-1); }));
  s.push_back(plain("matmul", {{2, 3, 4}, {4, 5}}, [](const V& x) { return x[0].matmul(x[1]); }));
  s.push_back(plain("bmm", {{2, 4, 3}, {2, 5, 4}}, [](const V& x) { return bmm(x[0], x[1], true, true); }));
  s.push_back(plain("layer_norm", {{2, 3, 6}, {6}, {6}}, [](const V& x) { return layer_norm(x[0], x[1], x[2]); }));
  s.push_back(plain("rms_norm", {{2, 3, 6}, {6}}, [](const V& x) { return rms_norm(x[0], x[1]); }));
  s.push_back({"rope",
               [](const Options& o) {
                 Tensor theta = randn({3, 4}, o);
                 return V{leaf({2, 3, 4}, o), theta.cos(), theta.sin()};
               },
               [](const V& x) { return F::rope(x[0], x[1], x[2]); }});
  s.push_back(plain("swiglu", {{3, 4}, {3, 4}}, [](const V& x) { return F::swiglu(x[0], x[1]); }));
  s.push_back({"cross_entropy",
               [](const Options& o) {
                 return V{leaf({6, 5}, o), ids({1, 0, 4, -100, 2, 3}, {6}, o)};
               },
               [](const V& x) { return cross_entropy(x[0], x[1], -100, 0.1); }});
  s.push_back(plain("scaled_dot_product_attention", {{1, 2, 4, 3}, {1, 2, 4, 3}, {1, 2, 4, 3}},
                    [](const V& x) { return F::scaled_dot_product_attention(x[0], x[1], x[2], {}, 0, true); }));
  s.push_back({"embedding",
               [](const Options& o) {
                 return V{leaf({5, 4}, o), ids({0, 3, 3, 1, 4, 0}, {2, 3}, o)};
               },
               [](const V& x) { return embedding(x[0], x[1]); }});
  // ---- indexing and joining
  s.push_back({"gather",
               [](const Options& o) {
                 return V{leaf({3, 4}, o), ids({0, 2, 2, 1, 0, 1}, {3, 2}, o)};
               },
               [](const V& x) { return x[0].gather(1, x[1]); }});
  s.push_back({"scatter",  // index unique per column: a deterministic result
               [](const Options& o) {
                 return V{leaf({4, 3}, o), ids({0, 1, 3, 2, 0, 1}, {2, 3}, o), leaf({2, 3}, o)};
               },
               [](const V& x) { return scatter(x[0], 0, x[1], x[2]); }});
  s.push_back({"scatter_add",
               [](const Options& o) {
                 return V{leaf({4, 3}, o), ids({0, 1, 1, 0, 0, 3}, {2, 3}, o), leaf({2, 3}, o)};
               },
               [](const V& x) { return scatter_add(x[0], 0, x[1], x[2]); }});
  s.push_back({"index_select",
               [](const Options& o) {
                 return V{leaf({2, 3}, o), ids({2, 0, 2}, {3}, o)};
               },
               [](const V& x) { return x[0].index_select(-1, x[1]); }});
  s.push_back({"index_add",
               [](const Options& o) {
                 return V{leaf({4, 3}, o), ids({0, 2, 0}, {3}, o), leaf({3, 3}, o)};
               },
               [](const V& x) { return index_add(x[0], 0, x[1], x[2], 1.5); }});
  s.push_back({"masked_fill",
               [](const Options& o) {
                 return V{leaf({3, 4}, o), ids({1, 0, 0, 1}, {4}, o) > 0};
               },
               [](const V& x) { return x[0].masked_fill(x[1], -2.0) * x[0]; }});
  s.push_back(plain("cat", {{2, 1}, {2, 3}, {2, 2}}, [](const V& x) { return F::cat({x[0], x[1], x[2]}, 1); }));
  s.push_back(plain("stack", {{2, 3}, {2, 3}}, [](const V& x) { return F::stack({x[0], x[1], x[0]}, -1); }));
  s.push_back(plain("split", {{3, 4}}, [](const V& x) {
    auto p = x[0].split(2, 1);
    return p[0] * 2 + p[1].exp();
  }));
  s.push_back(plain("triu", {{2, 3, 3}}, [](const V& x) { return x[0].triu(1); }));
  s.push_back(plain("tril", {{2, 3, 3}}, [](const V& x) { return x[0].tril(-1); }));
  s.push_back(plain("topk", {{4, 3}}, [](const V& x) { return x[0].topk(2, 0, false).first; }));
  s.push_back(plain("sort", {{3, 5}}, [](const V& x) { return x[0].sort(-1, true).first; }));
  // ---- convolution and pooling
  s.push_back(
      plain("conv2d", {{1, 2, 5, 4}, {3, 2, 3, 2}, {3}}, [](const V& x) { return F::conv2d(x[0], x[1], x[2], 2, 1); }));
  s.push_back(plain("max_pool2d", {{1, 2, 5, 5}}, [](const V& x) { return F::max_pool2d(x[0], 3, 2, 1); }));
  s.push_back(
      plain("avg_pool2d", {{1, 1, 6, 6}}, [](const V& x) { return F::avg_pool2d(x[0], 3, 2, 1, true, false); }));
  // ---- cumulative, scatter_reduce
  s.push_back(plain("cumsum", {{3, 4}}, [](const V& x) { return cumsum(x[0], 1); }));
  s.push_back(plain(
      "cumprod", {{3, 4}}, [](const V& x) { return cumprod(x[0], -1); }, true));
  s.push_back(plain("logcumsumexp", {{4, 3}}, [](const V& x) { return logcumsumexp(x[0], 0); }));
  s.push_back(plain("cummax", {{3, 5}}, [](const V& x) { return cummax(x[0], 1).first; }));
  s.push_back(plain("cummin", {{4, 3}}, [](const V& x) { return cummin(x[0], 0).first; }));
  s.push_back({"scatter_reduce",
               [](const Options& o) {
                 return V{leaf({4, 3}, o), ids({0, 1, 1, 0, 0, 3}, {2, 3}, o), pos({2, 3}, o)};
               },
               [](const V& x) {
                 return scatter_reduce(x[0], 0, x[1], x[2], "mean", false) +
                        scatter_reduce(x[0], 0, x[1], x[2], "prod");
               }});
  // ---- factorizations and solves: well-conditioned inputs (2 on the diagonal, small entries elsewhere)
  auto diag2 = [](Shape s, const Options& o) {
    return (randn(s, o) * 0.3 + eye(s.back(), 0, o) * 2).detach().requires_grad_();
  };
  // 3, 2, 1 on the diagonal: well separated singular values and eigenvalues (stable vectors)
  auto spread = [](const Options& o) {
    return (randn({3, 3}, o) * 0.1 + eye(3, 0, o) * arange(3, 0, -1, o)).detach().requires_grad_();
  };
  s.push_back({"solve_triangular",
               [diag2](const Options& o) {
                 return V{diag2({2, 3, 3}, o), leaf({2, 3, 2}, o)};
               },
               [](const V& x) {
                 return linalg::solve_triangular(x[0], x[1], true) + linalg::solve_triangular(x[0], x[1], false);
               }});
  s.push_back({"cholesky",
               [diag2](const Options& o) {
                 return V{diag2({3, 3}, o)};
               },
               [](const V& x) { return linalg::cholesky(x[0].matmul(x[0].t())); }});
  s.push_back({"qr",  // R's diagonal far from 0: no Householder sign flips under a step
               [](const Options& o) {
                 return V{(randn({4, 3}, o) * 0.3 + eye(4, 3, o) * 2).detach().requires_grad_()};
               },
               [](const V& x) {
                 auto qr = linalg::qr(x[0]);
                 return F::cat({qr.first.reshape({-1}), qr.second.reshape({-1})}, 0);
               }});
  s.push_back({"svd", [spread](const Options& o) { return V{spread(o)}; },
               [](const V& x) {  // functions of the SVD that do not depend on the vectors' signs
                 const linalg::SVD d = linalg::svd(x[0], false);
                 return F::cat({d.S, d.U.square().reshape({-1}), d.U.matmul(d.Vh).reshape({-1})}, 0);
               }});
  s.push_back({"eigh", [spread](const Options& o) { return V{spread(o)}; },
               [](const V& x) {
                 auto e = linalg::eigh(x[0] + x[0].t());
                 return F::cat({e.first, e.second.square().reshape({-1})}, 0);
               }});
  return s;
}

}  // namespace

const std::vector<GradSample>& grad_samples() {
  static const std::vector<GradSample> samples = make_samples();
  return samples;
}

const GradSample* find_grad_sample(const std::string& op) {
  for (const GradSample& s : grad_samples())
    if (s.op == op) return &s;
  return nullptr;
}

std::string gradcheck_sample(const GradSample& sample, DType dtype, const Device& device) {
  // float64: steps of 1e-6 and the default tolerances.  float32 (and a float64 case that
  // rounds through float32): a step float32 resolves, and tolerances that a wrong rule
  // still misses by far (its errors are of the gradient's own size, O(1) here).
  GradcheckOptions opts;
  if (dtype != DType::f64)
    opts = {.eps = 1e-3, .atol = 1e-2, .rtol = 1e-2};
  else if (sample.rounds)
    opts = {.eps = 1e-2, .atol = 1e-3, .rtol = 1e-2};
  manual_seed(7);
  const std::vector<Tensor> in = sample.inputs({.dtype = dtype, .device = device});
  return gradcheck(sample.fn, in, opts);
}

}  // namespace genesis::autograd

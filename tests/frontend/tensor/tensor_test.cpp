// tensor_test.cpp - genesis::Tensor: creation, promotion, views, in-place ops,
// printing, item/to, errors.
#include <gtest/gtest.h>

#include <sstream>

#include "genesis/autograd.hpp"
#include "genesis/tensor.hpp"

#include "../test_common.h"

namespace {

using genesis::DType;
using genesis::Tensor;
using D = std::vector<double>;

const bool g_init = genesis_test::init_reference();

TEST(CppTensor, Creation) {
  Tensor a = genesis::tensor({{1.0, 2.0}, {3.0, 4.0}});
  EXPECT_EQ(a.shape(), (genesis::Shape{2, 2}));
  EXPECT_EQ(a.dtype(), DType::f32);
  EXPECT_EQ(a.tolist(), (D{1, 2, 3, 4}));
  EXPECT_EQ(genesis::tensor(std::vector<double>{1, 2}, {2}).dtype(), DType::f64);
  EXPECT_EQ(genesis::tensor(std::vector<int64_t>{1, 2}, {2, 1}).dtype(), DType::i64);
  EXPECT_EQ(genesis::tensor(std::vector<float>{1, 2}, {2}, {.dtype = DType::bf16}).dtype(), DType::bf16);
  EXPECT_EQ(genesis::zeros({2, 3}).tolist(), D(6, 0));
  EXPECT_EQ(genesis::ones({3}, {.dtype = genesis::int32}).tolist(), D(3, 1));
  EXPECT_EQ(genesis::full({2}, 7.5).tolist(), (D{7.5, 7.5}));
  EXPECT_EQ(genesis::arange(4).dtype(), DType::i64);
  EXPECT_EQ(genesis::arange(4).tolist(), (D{0, 1, 2, 3}));
  EXPECT_EQ(genesis::arange(0, 1, 0.25).tolist(), (D{0, 0.25, 0.5, 0.75}));
  EXPECT_EQ(genesis::linspace(0, 1, 5).tolist(), (D{0, 0.25, 0.5, 0.75, 1}));
  EXPECT_EQ(genesis::eye(2, 3).tolist(), (D{1, 0, 0, 0, 1, 0}));
  EXPECT_EQ(genesis::scalar_tensor(3).dim(), 0);

  genesis::manual_seed(0);
  Tensor r1 = genesis::randn({100});
  genesis::manual_seed(0);
  Tensor r2 = genesis::randn({100});
  EXPECT_EQ(r1.tolist(), r2.tolist());
  Tensor u = genesis::rand({1000});
  EXPECT_GE(u.min().item<double>(), 0.0);
  EXPECT_LT(u.max().item<double>(), 1.0);
  Tensor ri = genesis::randint(3, 7, {500});
  EXPECT_EQ(ri.dtype(), DType::i64);
  EXPECT_GE(ri.min().item<int64_t>(), 3);
  EXPECT_LE(ri.max().item<int64_t>(), 6);

  Tensor l = genesis::zeros_like(genesis::ones({2, 2}, {.dtype = genesis::float64}));
  EXPECT_EQ(l.dtype(), DType::f64);
  EXPECT_EQ(genesis::ones_like(l).tolist(), D(4, 1));
  EXPECT_EQ(genesis::full_like(l, 2, {.dtype = genesis::float32}).dtype(), DType::f32);
  EXPECT_EQ(genesis::randn_like(l).shape(), l.shape());
  EXPECT_EQ(genesis::rand_like(l).dtype(), DType::f64);
  EXPECT_EQ(genesis::randint_like(l, 0, 2).dtype(), DType::i64);
}

TEST(CppTensor, PromotionThroughOperators) {
  Tensor i = genesis::tensor(std::vector<int64_t>{1, 2}, {2});
  Tensor f = genesis::tensor({1.0, 2.0});
  Tensor d = genesis::tensor(std::vector<double>{1, 2}, {2});
  EXPECT_EQ((i + 1).dtype(), DType::i64);    // int scalar keeps int
  EXPECT_EQ((i * 2.5).dtype(), DType::f32);  // float scalar -> default float
  EXPECT_EQ((f * 2.5).dtype(), DType::f32);  // wrapped scalar does not raise f32
  EXPECT_EQ((f + d).dtype(), DType::f64);
  EXPECT_EQ((i + f).dtype(), DType::f32);
  EXPECT_EQ((i / i).dtype(), DType::f32);  // true division
  EXPECT_EQ((f > 1.5).dtype(), DType::boolean);
  EXPECT_EQ((f > 1.5).tolist(), (D{0, 1}));
  EXPECT_EQ((1 - f).tolist(), (D{0, -1}));
  EXPECT_EQ((2 / f).tolist(), (D{2, 1}));
  EXPECT_EQ((-f).tolist(), (D{-1, -2}));
  Tensor bf = genesis::ones({2}, {.dtype = genesis::bfloat16});
  EXPECT_EQ((bf * 3.0).dtype(), DType::bf16);
}

TEST(CppTensor, MathAndReductions) {
  Tensor x = genesis::tensor({{1.0, -2.0, 3.0}, {4.0, 5.0, -6.0}});
  EXPECT_EQ(x.sum().item<double>(), 5);
  EXPECT_EQ(x.sum(0).tolist(), (D{5, 3, -3}));
  EXPECT_EQ(x.sum(1, true).shape(), (genesis::Shape{2, 1}));
  EXPECT_EQ(x.max(1).tolist(), (D{3, 5}));
  EXPECT_EQ(x.min().item<double>(), -6);
  EXPECT_EQ(x.argmax(1).tolist(), (D{2, 1}));
  EXPECT_EQ(x.argmax().item<int64_t>(), 4);
  EXPECT_NEAR(x.mean().item<double>(), 5.0 / 6, 1e-6);
  EXPECT_NEAR(genesis::tensor({1.0, 2.0, 3.0, 4.0}).var().item<double>(), 1.6666667, 1e-5);
  EXPECT_NEAR(genesis::tensor({3.0, 4.0}).norm().item<double>(), 5, 1e-6);
  EXPECT_EQ(x.abs().tolist(), (D{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(x.relu().tolist(), (D{1, 0, 3, 4, 5, 0}));
  Tensor s = x.softmax(-1).sum(-1);
  EXPECT_NEAR(s.tolist()[0], 1, 1e-6);
  EXPECT_EQ(genesis::matmul(genesis::eye(2), x).tolist(), x.tolist());
  EXPECT_EQ(x.matmul(genesis::ones({3})).tolist(), (D{2, 3}));
  EXPECT_EQ(genesis::tensor({4.0}).pow(0.5).item<double>(), 2);
}

TEST(CppTensor, Views) {
  Tensor x = genesis::arange(0, 12, 1, {.dtype = genesis::float32}).reshape({3, 4});
  EXPECT_EQ(x.view({4, 3}).shape(), (genesis::Shape{4, 3}));
  EXPECT_EQ(x.t().is_contiguous(), false);
  EXPECT_EQ(x.t().contiguous().tolist(), (D{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
  EXPECT_THROW(x.t().view({12}), genesis::Error);
  EXPECT_EQ(x.t().reshape({12}).shape(), (genesis::Shape{12}));
  EXPECT_EQ(x[1].tolist(), (D{4, 5, 6, 7}));
  EXPECT_EQ(x[-1].tolist(), (D{8, 9, 10, 11}));
  EXPECT_EQ(x.select(1, -1).tolist(), (D{3, 7, 11}));
  EXPECT_EQ(x.slice(1, 1, -1).tolist(), (D{1, 2, 5, 6, 9, 10}));
  EXPECT_EQ(x.slice(0, -2, 100).shape(), (genesis::Shape{2, 4}));
  EXPECT_EQ(x.slice(1, 0, 4, 2).tolist(), (D{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(x.permute({1, 0}).shape(), (genesis::Shape{4, 3}));
  EXPECT_EQ(x.unsqueeze(0).shape(), (genesis::Shape{1, 3, 4}));
  EXPECT_EQ(x.unsqueeze(-1).squeeze().shape(), (genesis::Shape{3, 4}));
  EXPECT_EQ(x.reshape({2, 1, 6}).squeeze(1).shape(), (genesis::Shape{2, 6}));
  EXPECT_EQ(x.reshape({2, 2, 3}).flatten(1).shape(), (genesis::Shape{2, 6}));
  EXPECT_EQ(genesis::tensor({1.0, 2.0}).unsqueeze(1).expand({2, 3}).tolist(), (D{1, 1, 1, 2, 2, 2}));
  // Views share storage: writing through one shows in the other.
  Tensor row = x[0];
  row.fill_(-1);
  EXPECT_EQ(x.slice(0, 0, 1).tolist(), (D{-1, -1, -1, -1}));
  // Copies share the handle, like torch.
  Tensor alias = x;
  alias.zero_();
  EXPECT_EQ(x.sum().item<double>(), 0);
}

TEST(CppTensor, InPlace) {
  Tensor x = genesis::ones({3});
  x.add_(genesis::tensor({1.0, 2.0, 3.0}));
  EXPECT_EQ(x.tolist(), (D{2, 3, 4}));
  x.add_(genesis::ones({3}), -2);
  EXPECT_EQ(x.tolist(), (D{0, 1, 2}));
  x.mul_(3);
  EXPECT_EQ(x.tolist(), (D{0, 3, 6}));
  x.mul_(genesis::tensor({1.0, 0.5, 2.0}));
  EXPECT_EQ(x.tolist(), (D{0, 1.5, 12}));
  x += genesis::ones({3});
  EXPECT_EQ(x.tolist(), (D{1, 2.5, 13}));
  x.copy_(genesis::tensor(std::vector<int64_t>{7}, {1}));  // broadcast + convert
  EXPECT_EQ(x.tolist(), (D{7, 7, 7}));
  x.fill_(0.5);
  EXPECT_EQ(x.tolist(), (D{0.5, 0.5, 0.5}));
  x.zero_();
  EXPECT_EQ(x.tolist(), (D{0, 0, 0}));
}

TEST(CppTensor, ItemAndTo) {
  EXPECT_EQ(genesis::tensor({2.5}).item<double>(), 2.5);
  EXPECT_EQ(genesis::tensor({2.5}).item<int>(), 2);
  EXPECT_THROW(genesis::ones({2}).item<double>(), genesis::Error);
  Tensor x = genesis::tensor({1.7, -2.2});
  EXPECT_EQ(x.to(DType::i64).tolist(), (D{1, -2}));  // truncates
  EXPECT_EQ(x.to(DType::f64).dtype(), DType::f64);
  EXPECT_TRUE(x.to(DType::f32).is_same(x));
  EXPECT_EQ(x.to(genesis::Device("cpu")).device(), genesis::Device("cpu"));
  EXPECT_EQ(genesis::Device("cpu").str(), "cpu:0");
  EXPECT_EQ(genesis::Device().type(), "cpu");
  (void)genesis::cuda_available();
}

std::string str(const Tensor& t) {
  std::ostringstream os;
  os << t;
  return os.str();
}

TEST(CppTensor, PrintsLikePyTorch) {
  EXPECT_EQ(str(genesis::tensor({{1.0, 2.0}, {3.0, 4.0}})), "tensor([[1., 2.],\n        [3., 4.]])");
  EXPECT_EQ(str(genesis::tensor({0.5, -1.25})), "tensor([ 0.5000, -1.2500])");
  EXPECT_EQ(str(genesis::tensor({1e-5, 1.0})), "tensor([1.0000e-05, 1.0000e+00])");
  EXPECT_EQ(str(genesis::scalar_tensor(3)), "tensor(3.)");
  EXPECT_EQ(str(genesis::arange(3)), "tensor([0, 1, 2])");
  EXPECT_EQ(str(genesis::tensor({1.0, 2.0}) > 1.5), "tensor([False,  True])");
  EXPECT_EQ(str(genesis::ones({2}, {.dtype = genesis::float64})), "tensor([1., 1.], dtype=genesis.float64)");
  EXPECT_EQ(str(genesis::zeros({0})), "tensor([])");
  EXPECT_EQ(str(genesis::zeros({0, 3})), "tensor([], size=(0, 3))");
  EXPECT_EQ(str(genesis::arange(0, 8, 1, {.dtype = genesis::float32}).reshape({2, 2, 2})),
            "tensor([[[0., 1.],\n         [2., 3.]],\n\n        [[4., 5.],\n         [6., 7.]]])");
  Tensor x = genesis::tensor({1.0, 2.0}, {.requires_grad = true});
  EXPECT_EQ(str(x), "tensor([1., 2.], requires_grad=True)");
  EXPECT_EQ(str(x.sum()), "tensor(3., grad_fn=<SumBackward0>)");
  EXPECT_EQ(str((x * 2).log_softmax(0)).find("grad_fn=<LogSoftmaxBackward0>") != std::string::npos, true);
  // Long rows wrap at 80 columns; big tensors are summarised.
  EXPECT_NE(str(genesis::arange(0, 30, 1, {.dtype = genesis::float32})).find(",\n        "), std::string::npos);
  EXPECT_EQ(str(genesis::arange(2000)), "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])");
}

TEST(CppTensor, ErrorsNameTheOp) {
  try {
    genesis::ones({2, 3}) + genesis::ones({4});
    FAIL() << "no error";
  } catch (const genesis::Error& e) {
    EXPECT_EQ(e.code(), GN_ERR_SHAPE);
    EXPECT_NE(std::string(e.what()).find("add"), std::string::npos) << e.what();
  }
  try {
    genesis::matmul(genesis::ones({2, 3}), genesis::ones({2, 3}));
    FAIL() << "no error";
  } catch (const genesis::Error& e) {
    EXPECT_NE(std::string(e.what()).find("matmul"), std::string::npos) << e.what();
  }
  EXPECT_THROW(genesis::Device("nosuchdevice"), genesis::Error);
  EXPECT_THROW(genesis::ones({2}).size(3), genesis::Error);
  EXPECT_THROW(genesis::tensor(std::vector<float>{1, 2, 3}, {2}), genesis::Error);
  EXPECT_THROW(genesis::init({}), genesis::Error);  // the runtime already exists
  EXPECT_THROW(Tensor().dim(), genesis::Error);
}

}  // namespace

namespace {

using genesis::indexing::Ellipsis;
using genesis::indexing::None;
using genesis::indexing::Slice;

TEST(CppTensor, IndexLikePython) {
  Tensor x = genesis::arange(24).reshape({2, 3, 4});  // x[i][j][k] = 12i + 4j + k
  EXPECT_EQ(x.index({1}).tolist(), x[1].tolist());
  Tensor a = x.index({Slice(), 1});  // x[:, 1]
  EXPECT_EQ(a.shape(), (genesis::Shape{2, 4}));
  EXPECT_EQ(a.tolist(), (D{4, 5, 6, 7, 16, 17, 18, 19}));
  Tensor b = x.index({Ellipsis, 2});  // x[..., 2]
  EXPECT_EQ(b.shape(), (genesis::Shape{2, 3}));
  EXPECT_EQ(b.tolist(), (D{2, 6, 10, 14, 18, 22}));
  Tensor c = x.index({0, Slice(1), Slice(std::nullopt, std::nullopt, 2)});  // x[0, 1:, ::2]
  EXPECT_EQ(c.tolist(), (D{4, 6, 8, 10}));
  Tensor d = x.index({None, 1, Ellipsis, -1});  // x[None, 1, ..., -1]
  EXPECT_EQ(d.shape(), (genesis::Shape{1, 3}));
  EXPECT_EQ(d.tolist(), (D{15, 19, 23}));
  Tensor e = x.index({Slice(-5, 10), genesis::tensor(std::vector<int64_t>{2, 0}, {2})});  // x[-5:10, [2, 0]]
  EXPECT_EQ(e.shape(), (genesis::Shape{2, 2, 4}));
  EXPECT_EQ(e.tolist(), (D{8, 9, 10, 11, 0, 1, 2, 3, 20, 21, 22, 23, 12, 13, 14, 15}));
  EXPECT_EQ(x.index({1, 2, 3}).item<int64_t>(), 23);
  EXPECT_EQ(x.index({Slice(3, 1)}).shape(), (genesis::Shape{0, 3, 4}));  // empty, as Python
  // Views share storage: writes through index_put_ land in x.
  Tensor z = genesis::zeros({3, 4});
  z.index_put_({Slice(), 1}, 5.0);
  z.index_put_({2}, genesis::tensor({1.0, 2.0, 3.0, 4.0}));
  z.index_put_({0, Slice(2)}, genesis::tensor({7.0}));  // broadcast
  EXPECT_EQ(z.tolist(), (D{0, 5, 7, 7, 0, 5, 0, 0, 1, 2, 3, 4}));
  // Errors.
  EXPECT_THROW(x.index({0, 0, 0, 0}), genesis::Error);
  EXPECT_THROW(x.index({2}), genesis::Error);
  EXPECT_THROW(x.index({Ellipsis, 0, Ellipsis}), genesis::Error);
  EXPECT_THROW(x.index({x.index({Slice(), 0}) > 3}), genesis::Error);  // mask shape (2, 4) vs dims (2, 3)
  EXPECT_THROW(x.index({Slice(0, 2, 0)}), genesis::Error);
  EXPECT_THROW(z.index_put_({genesis::tensor(std::vector<int64_t>{0}, {1})}, 1.0), genesis::Error);
}

TEST(CppTensor, IndexIsDifferentiable) {
  Tensor w = genesis::ones({3, 4}, {.requires_grad = true});
  Tensor ids = genesis::tensor(std::vector<int64_t>{3, 3, 0}, {3});
  (w.index({Slice(1), ids}) * 2).sum().backward();  // rows 1, 2; columns 3 (twice) and 0
  EXPECT_EQ(w.grad().tolist(), (D{0, 0, 0, 0, 2, 0, 0, 4, 2, 0, 0, 4}));
  Tensor v = genesis::ones({2, 3}, {.requires_grad = true});
  EXPECT_THROW(v.index_put_({0}, 1.0), genesis::Error);  // in place on a leaf that needs grad
}

// Bool masks against a loop oracle over tolist(): x (2, 3, 4) with x[i][j][k] = 12i + 4j + k.
TEST(CppTensor, BoolMaskIndexing) {
  Tensor x = genesis::arange(0, 24, 1, {.dtype = genesis::float64}).reshape({2, 3, 4});
  const D xv = x.tolist();
  auto pick = [](int64_t f) { return (f * 7) % 3 == 1; };  // an irregular pattern
  // Full mask: the true elements in row-major order, 1-D.
  std::vector<int64_t> mbits;
  D want;
  for (int64_t f = 0; f < 24; ++f) {
    mbits.push_back(pick(f));
    if (pick(f)) want.push_back(xv[f]);
  }
  Tensor full = genesis::tensor(mbits, {2, 3, 4}).to(DType::boolean);
  Tensor a = x.index({full});
  EXPECT_EQ(a.shape(), (genesis::Shape{static_cast<int64_t>(want.size())}));
  EXPECT_EQ(a.tolist(), want);
  EXPECT_EQ(x.masked_select(full).tolist(), want);
  // nonzero: the coordinates of the same elements.
  D coords;
  for (int64_t f = 0; f < 24; ++f)
    if (pick(f)) coords.insert(coords.end(), {double(f / 12), double(f / 4 % 3), double(f % 4)});
  EXPECT_EQ(full.nonzero().tolist(), coords);
  EXPECT_EQ(full.nonzero().dtype(), DType::i64);
  // Leading-dims mask (2, 3): rows of 4, shape (n, 4); a mask after a slice keeps the dims around it.
  Tensor rows = genesis::tensor(std::vector<int64_t>{1, 0, 1, 0, 0, 1}, {2, 3}).to(DType::boolean);
  Tensor b = x.index({rows});
  EXPECT_EQ(b.shape(), (genesis::Shape{3, 4}));
  EXPECT_EQ(b.tolist(), (D{0, 1, 2, 3, 8, 9, 10, 11, 20, 21, 22, 23}));
  Tensor cols = genesis::tensor(std::vector<int64_t>{0, 1, 1, 0}, {4}).to(DType::boolean);
  Tensor c = x.index({Slice(), Slice(1), cols});  // x[:, 1:, cols]
  EXPECT_EQ(c.shape(), (genesis::Shape{2, 2, 2}));
  EXPECT_EQ(c.tolist(), (D{5, 6, 9, 10, 17, 18, 21, 22}));
  EXPECT_EQ(x.index({genesis::zeros({2}, {.dtype = genesis::boolean})}).shape(), (genesis::Shape{0, 3, 4}));
  // Writes: a number, a tensor of the selected shape, a broadcast row.
  Tensor y = x.clone();
  y.index_put_({full}, -1.0);
  D yv = xv;
  for (int64_t f = 0; f < 24; ++f)
    if (pick(f)) yv[f] = -1;
  EXPECT_EQ(y.tolist(), yv);
  Tensor z = x.clone();
  z.index_put_({rows}, genesis::tensor(std::vector<double>{100, 101, 102, 103}, {4}));
  D zv = xv;
  for (int64_t r : {0, 2, 5})
    for (int64_t k = 0; k < 4; ++k) zv[r * 4 + k] = 100 + k;
  EXPECT_EQ(z.tolist(), zv);
  Tensor w = x.clone();
  std::vector<double> vals;
  for (size_t i = 0; i < want.size(); ++i) vals.push_back(1000 + i);
  w.index_put_(std::vector<genesis::TensorIndex>{full}, genesis::tensor(vals, {static_cast<int64_t>(vals.size())}));
  D wv = xv;
  for (int64_t f = 0, i = 0; f < 24; ++f)
    if (pick(f)) wv[f] = 1000 + static_cast<double>(i++);
  EXPECT_EQ(w.tolist(), wv);
  // Gradients: x[mask] scatters back into the masked positions.
  Tensor p = genesis::ones({2, 3, 4}, {.dtype = genesis::float64, .requires_grad = true});
  (p.index({rows}) * 3).sum().backward();
  D g(24, 0);
  for (int64_t r : {0, 2, 5})
    for (int64_t k = 0; k < 4; ++k) g[r * 4 + k] = 3;
  EXPECT_EQ(p.grad().tolist(), g);
  // Errors: wrong mask shape, a mask with another tensor index, a non-bool mask for masked_select.
  EXPECT_THROW(x.index({cols}), genesis::Error);
  EXPECT_THROW(x.index({rows, genesis::tensor(std::vector<int64_t>{0}, {1})}), genesis::Error);
  EXPECT_THROW(x.masked_select(genesis::ones({4})), genesis::Error);
}

TEST(CppTensor, SortTopkSplitAndFriends) {
  Tensor x = genesis::tensor({{3.0, 1.0, 2.0}, {0.5, 4.0, -1.0}});
  auto [v, i] = x.topk(2);
  EXPECT_EQ(v.tolist(), (D{3, 2, 4, 0.5}));
  EXPECT_EQ(i.tolist(), (D{0, 2, 1, 0}));
  auto [s, si] = x.sort(1, true);
  EXPECT_EQ(s.tolist(), (D{3, 2, 1, 4, 0.5, -1}));
  EXPECT_EQ(x.argsort(0).tolist(), (D{1, 0, 1, 0, 1, 0}));
  auto parts = genesis::arange(7).split(3);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[2].tolist(), (D{6}));
  EXPECT_EQ(genesis::arange(6).chunk(4).size(), 3u);  // torch: chunks of ceil(6/4) = 2
  EXPECT_THROW(genesis::arange(6).split_with_sizes({2, 2}), genesis::Error);
  EXPECT_EQ(genesis::ones({3, 3}).triu(1).tolist(), (D{0, 1, 1, 0, 0, 1, 0, 0, 0}));
  EXPECT_EQ(genesis::ones({2, 2}).tril().tolist(), (D{1, 0, 1, 1}));
  EXPECT_EQ(x.masked_fill(x > 2, 0).tolist(), (D{0, 1, 2, 0.5, 0, -1}));
  EXPECT_EQ(genesis::one_hot(genesis::tensor(std::vector<int64_t>{2, 0}, {2}), 3).tolist(), (D{0, 0, 1, 1, 0, 0}));
  Tensor a = genesis::arange(0, 12, 1, {.dtype = genesis::float32}).reshape({2, 2, 3});
  Tensor b = genesis::ones({2, 3, 1});
  EXPECT_EQ(genesis::bmm(a, b).tolist(), (D{3, 12, 21, 30}));
  EXPECT_EQ(genesis::bmm(a, a, false, true).shape(), (genesis::Shape{2, 2, 2}));
  EXPECT_EQ(x.prod(1).tolist(), (D{6, -2}));
}

TEST(CppTensor, CreationHelpers) {
  EXPECT_EQ(genesis::linspace(0, 1, 5).tolist(), (D{0, 0.25, 0.5, 0.75, 1}));
  EXPECT_EQ(genesis::linspace(2, 2, 1).tolist(), (D{2}));
  EXPECT_EQ(genesis::eye(2, 3).tolist(), (D{1, 0, 0, 0, 1, 0}));
  EXPECT_EQ(genesis::eye(3).tolist(), (D{1, 0, 0, 0, 1, 0, 0, 0, 1}));
  Tensor t = genesis::ones({2, 3}, {.dtype = genesis::float64});
  EXPECT_EQ(genesis::zeros_like(t).dtype(), DType::f64);
  EXPECT_EQ(genesis::full_like(t, 7).tolist(), D(6, 7));
  EXPECT_EQ(genesis::rand_like(t).shape(), t.shape());
  EXPECT_EQ(genesis::randint_like(t, 0, 5).dtype(), DType::i64);
  EXPECT_EQ(genesis::Device("cpu").str(), "cpu:0");
  EXPECT_EQ(genesis::Device("cpu:0"), genesis::Device());
  // This test runs with the reference plugin only: no CUDA, and "cuda:0" is a clear error.
  EXPECT_EQ(genesis::cuda_available(), false);
  try {
    genesis::Device("cuda:0");
    ADD_FAILURE() << "no error";
  } catch (const genesis::Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown device type 'cuda'"), std::string::npos) << e.what();
  }
}

}  // namespace

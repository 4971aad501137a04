// module_test.cpp - nn::Module: registration, names, modes, to(), zero_grad,
// state_dict round trips and every load_state_dict error.
#include "common.h"

namespace {

using namespace nn_test;
namespace nn = genesis::nn;

// The quick-start network of the Python docs, in C++.
struct SimpleNet : nn::Module {
  nn::Linear fc1{4, 10};
  nn::ReLU relu;
  nn::Linear fc2{10, 3};
  SimpleNet() {
    register_module("fc1", fc1);
    register_module("relu", relu);
    register_module("fc2", fc2);
  }
  Tensor forward(const Tensor& x) override { return fc2(relu(fc1(x))); }
};

std::vector<std::string> names(const std::vector<std::pair<std::string, Tensor>>& v) {
  std::vector<std::string> out;
  for (const auto& it : v) out.push_back(it.first);
  return out;
}

TEST(NnModule, NamesAndTraversal) {
  SimpleNet net;
  EXPECT_EQ(names(net.named_parameters()),
            (std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}));
  EXPECT_EQ(net.parameters().size(), 4u);
  EXPECT_EQ(net.parameters(false).size(), 0u);
  EXPECT_EQ(net.children().size(), 3u);
  EXPECT_EQ(net.named_children()[1].first, "relu");
  EXPECT_EQ(net.named_modules().size(), 4u);
  EXPECT_TRUE(net.fc1.weight.requires_grad());
  EXPECT_TRUE(net.fc1.weight.is_same(net.parameters()[0]));  // the member is the registered tensor
  Tensor y = net(genesis::randn({2, 4}));
  EXPECT_EQ(y.shape(), (genesis::Shape{2, 3}));
}

TEST(NnModule, TrainEvalPropagates) {
  SimpleNet net;
  EXPECT_TRUE(net.is_training());
  net.eval();
  EXPECT_FALSE(net.is_training());
  EXPECT_FALSE(net.fc2.is_training());
  net.train();
  EXPECT_TRUE(net.relu.is_training());
}

TEST(NnModule, ZeroGrad) {
  SimpleNet net;
  net(genesis::randn({2, 4})).sum().backward();
  EXPECT_TRUE(net.fc1.weight.grad().defined());
  net.zero_grad(false);
  EXPECT_EQ(net.fc1.weight.grad().abs().sum().item<double>(), 0.0);
  net.zero_grad();
  EXPECT_FALSE(net.fc1.weight.grad().defined());
}

TEST(NnModule, BuffersAndStateDictOrder) {
  nn::BatchNorm1d bn(3);
  bn.register_buffer("scratch", genesis::zeros({2}), false);
  EXPECT_EQ(names(bn.named_buffers()),
            (std::vector<std::string>{"running_mean", "running_var", "num_batches_tracked", "scratch"}));
  EXPECT_EQ(bn.state_dict().keys(),
            (std::vector<std::string>{"weight", "bias", "running_mean", "running_var", "num_batches_tracked"}));
  auto seq = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(2, 3), std::make_shared<nn::ReLU>(),
                                              std::make_shared<nn::Linear>(3, 1, false));
  EXPECT_EQ(seq->state_dict().keys(), (std::vector<std::string>{"0.weight", "0.bias", "2.weight"}));
}

TEST(NnModule, ToDTypeKeepsIdentity) {
  nn::BatchNorm1d bn(2);
  Tensor w = bn.weight;
  bn.weight.sum().backward();
  bn.to(genesis::float64);
  EXPECT_EQ(w.dtype(), genesis::float64);  // same Impl, converted in place
  EXPECT_EQ(bn.parameters()[0].dtype(), genesis::float64);
  EXPECT_EQ(w.grad().dtype(), genesis::float64);
  EXPECT_EQ(bn.running_var.dtype(), genesis::float64);
  EXPECT_EQ(bn.num_batches_tracked.dtype(), genesis::int64);  // integer buffers stay
  EXPECT_TRUE(w.requires_grad() && w.is_leaf());
  bn.to(genesis::Device("cpu"));
  EXPECT_EQ(bn.state_dict().at("weight").dtype(), genesis::float64);
}

TEST(NnModule, StateDictRoundTrip) {
  genesis::manual_seed(1);
  SimpleNet a;
  SimpleNet b;
  EXPECT_NE(a.fc1.weight.tolist(), b.fc1.weight.tolist());
  auto r = b.load_state_dict(a.state_dict());
  EXPECT_TRUE(r.missing_keys.empty() && r.unexpected_keys.empty());
  EXPECT_EQ(a.fc1.weight.tolist(), b.fc1.weight.tolist());
  EXPECT_EQ(a.fc2.bias.tolist(), b.fc2.bias.tolist());
  {  // a copy: changing a afterwards leaves b alone
    genesis::NoGradGuard g;
    a.fc1.weight.fill_(7);
  }
  EXPECT_NE(b.fc1.weight.tolist(), a.fc1.weight.tolist());
  // Through a sorted std::map (what genesis::save/load use).
  std::map<std::string, Tensor> m = a.state_dict();
  b.load_state_dict(m);
  EXPECT_EQ(b.fc1.weight.tolist(), a.fc1.weight.tolist());
}

// Expects load_state_dict(sd) to throw with exactly `msg`, and to change nothing.
void expect_load_error(SimpleNet& net, const nn::StateDict& sd, const std::string& msg, bool strict = true) {
  const auto before = net.fc1.bias.tolist();
  try {
    net.load_state_dict(sd, strict);
    ADD_FAILURE() << "no error, expected: " << msg;
  } catch (const genesis::Error& e) {
    EXPECT_EQ(std::string(e.what()), msg);
  }
  EXPECT_EQ(net.fc1.bias.tolist(), before);
}

TEST(NnModule, LoadStateDictErrors) {
  SimpleNet net;
  const nn::StateDict good = net.state_dict();
  auto edit = [&](auto f) {
    nn::StateDict sd;
    for (const auto& [k, v] : good) sd.insert(k, v.clone());
    sd["fc1.bias"].copy_(genesis::full({10}, 5.0));  // would change fc1.bias if applied
    f(sd);
    return sd;
  };
  // Missing key.
  nn::StateDict missing;
  for (const auto& [k, v] : edit([](nn::StateDict&) {}))
    if (k != "fc2.bias") missing.insert(k, v);
  expect_load_error(net, missing, "[load_state_dict] missing keys: \"fc2.bias\"");
  // Unexpected key.
  expect_load_error(net, edit([](nn::StateDict& sd) { sd.insert("fc3.weight", genesis::zeros({1})); }),
                    "[load_state_dict] unexpected keys: \"fc3.weight\"");
  // Shape mismatch, also when not strict.
  auto bad_shape = edit([](nn::StateDict& sd) { sd["fc1.weight"] = genesis::zeros({10, 5}); });
  expect_load_error(net, bad_shape,
                    "[load_state_dict] size mismatch for fc1.weight: checkpoint (10, 5), model (10, 4)");
  expect_load_error(net, bad_shape, "[load_state_dict] size mismatch for fc1.weight: checkpoint (10, 5), model (10, 4)",
                    false);
  // Dtype mismatch.
  expect_load_error(net,
                    edit([](nn::StateDict& sd) { sd["fc2.bias"] = genesis::zeros({3}, {.dtype = genesis::float64}); }),
                    "[load_state_dict] dtype mismatch for fc2.bias: checkpoint float64, model float32");
  // Non-strict: missing and unexpected are reported, the rest loads.
  nn::StateDict partial;
  partial.insert("fc1.bias", genesis::full({10}, 2.0));
  partial.insert("extra", genesis::zeros({1}));
  auto r = net.load_state_dict(partial, false);
  EXPECT_EQ(r.missing_keys, (std::vector<std::string>{"fc1.weight", "fc2.weight", "fc2.bias"}));
  EXPECT_EQ(r.unexpected_keys, (std::vector<std::string>{"extra"}));
  EXPECT_EQ(net.fc1.bias.tolist(), std::vector<double>(10, 2.0));
}

TEST(NnModule, ContainersIndexing) {
  nn::Sequential seq{std::make_shared<nn::Linear>(2, 3), std::make_shared<nn::Tanh>()};
  seq.push_back(std::make_shared<nn::Linear>(3, 1));
  EXPECT_EQ(seq.size(), 3u);
  EXPECT_EQ(seq[-1]->name(), "Linear");
  EXPECT_EQ(seq.at<nn::Linear>(0)->out_features, 3);
  EXPECT_THROW(seq.at<nn::Linear>(1), genesis::Error);
  EXPECT_THROW(seq[3], genesis::Error);
  Tensor x = genesis::randn({5, 2});
  auto l0 = seq.at<nn::Linear>(0), l2 = seq.at<nn::Linear>(2);
  expect_near(seq(x), (*l2)((*l0)(x).tanh()).tolist(), 1e-6);
  nn::ModuleList list{std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(1, 1)};
  EXPECT_EQ(names(list.named_parameters()), (std::vector<std::string>{"1.weight", "1.bias"}));
  int n = 0;
  for (const auto& m : list) n += m != nullptr;
  EXPECT_EQ(n, 2);
  EXPECT_THROW(list(x), genesis::Error);  // a ModuleList has no forward
}

}  // namespace

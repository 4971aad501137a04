// consumer.cpp - a C++ program built against an installed Genesis through
// find_package(Genesis) and Genesis::frontend.
//
//   consumer <prefix>
//
// Trains a Linear layer for a few SGD steps (autograd, nn, optim), checks a
// matmul, calls the third-party op "thirdparty_scale" through the C API on the
// frontend's runtime, and checks that every loaded plugin lies under <prefix>
// (a canonical path).
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "genesis/genesis.h"
#include "genesis/nn.hpp"
#include "genesis/optim.hpp"
#include "genesis/tensor.hpp"

namespace {

int failures = 0;

void expect(bool ok, const std::string& what) {
  std::printf("consumer++: %s %s\n", what.c_str(), ok ? "ok" : "FAILED");
  if (!ok) ++failures;
}

// Throws the status message of a failed C call.
void check(gn_status* st) {
  if (!st) return;
  std::string msg = gn_status_message(st);
  gn_status_free(st);
  throw std::runtime_error(msg);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer <prefix>\n");
    return 2;
  }
  const std::string prefix = std::string(argv[1]) + "/";
  try {
    genesis::manual_seed(0);
    auto x = genesis::tensor({{1.0, 2.0}, {3.0, 4.0}});
    auto w = genesis::tensor({{2.0, 0.0}, {0.0, 2.0}});
    expect(genesis::matmul(x, w).tolist() == std::vector<double>{2, 4, 6, 8}, "matmul");

    // y = 3x - 1, learnt by a Linear(1, 1) with SGD.
    genesis::nn::Linear fc(1, 1);
    genesis::optim::SGD opt(fc.parameters(), {.lr = 0.05});
    auto in = genesis::tensor(std::vector<float>{-1, 0, 1, 2}, {4, 1});
    auto target = genesis::tensor(std::vector<float>{-4, -1, 2, 5}, {4, 1});
    double first = 0, last = 0;
    for (int step = 0; step < 200; ++step) {
      opt.zero_grad();
      auto loss = genesis::nn::functional::mse_loss(fc(in), target);
      loss.backward();
      opt.step();
      last = loss.item<double>();
      if (step == 0) first = last;
    }
    expect(last < 1e-3 && last < first,
           "sgd on Linear (loss " + std::to_string(first) + " -> " + std::to_string(last) + ")");

    // The third-party op, by name, on the frontend's runtime.
    gn_runtime* rt = genesis::runtime();
    const gn_op* op = nullptr;
    check(gn_op_find(rt, "thirdparty_scale", &op));
    auto v = genesis::tensor({1.0, -2.0, 4.0});
    gn_tensor* inputs[1] = {v.handle()};
    gn_tensor* out[1] = {nullptr};
    gn_attr_value factor{};
    factor.kind = GN_ATTR_FLOAT;
    factor.u.f = 0.5;
    check(gn_op_call(rt, op, inputs, 1, &factor, 1, out, 1));
    auto scaled = genesis::Tensor::adopt(out[0]);
    expect(scaled.tolist() == std::vector<double>{0.5, -1.0, 2.0}, "thirdparty_scale");

    // Plugins come from the installation only.
    const size_t n = gn_runtime_plugin_count(rt);
    bool all_inside = n > 0;
    for (size_t i = 0; i < n; ++i) {
      gn_plugin_record rec{};
      rec.struct_size = sizeof rec;
      check(gn_runtime_plugin_get(rt, i, &rec));
      std::printf("consumer++: plugin %s %s\n", rec.name, rec.path);
      const std::string real = std::filesystem::canonical(rec.path).string();
      all_inside = all_inside && rec.loaded && real.compare(0, prefix.size(), prefix) == 0;
    }
    expect(all_inside, "every plugin loaded from " + prefix);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer++: %s\n", e.what());
    return 1;
  }
  std::printf("consumer++: %s\n", failures ? "FAILED" : "OK");
  return failures ? 1 : 0;
}

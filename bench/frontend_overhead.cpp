// bench/frontend_overhead.cpp - host overhead of one genesis::Tensor op on a
// 1-element CPU tensor, with and without autograd recording.  The kernel's
// own work is one float add, so the time is the frontend's plus the C API's
// (bench_op_overhead measures the C call alone for comparison).
//
//   build/bin/bench_frontend_overhead [--benchmark_repetitions=5 --benchmark_report_aggregates_only=true]
//
// Target: add with autograd recording <= 2 us.
#include <benchmark/benchmark.h>

#include "genesis/autograd.hpp"
#include "genesis/tensor.hpp"

namespace {

using genesis::Tensor;

// The cpu backend when built, else whatever the default search finds.
void init_once() {
  static const bool done = [] {
    genesis::init({.plugin_path = GENESIS_BENCH_PLUGIN_DIR});
    return true;
  }();
  (void)done;
}

// Times y = op(a, b) on 1-element tensors (a, b requiring grad as asked); y and any graph it
// recorded are freed each iteration (both are part of the cost per op).
template <class Op>
void time_op(benchmark::State& state, bool a_grad, bool b_grad, Op op) {
  init_once();
  Tensor a = genesis::ones({1}, {.requires_grad = a_grad}), b = genesis::ones({1}, {.requires_grad = b_grad});
  for (auto _ : state) {
    Tensor y = op(a, b);
    benchmark::DoNotOptimize(y);
  }
}
// The ops timed (lambdas, so that each time_op inlines its own).
constexpr auto add = [](const Tensor& a, const Tensor& b) { return a + b; };
constexpr auto mul = [](const Tensor& a, const Tensor& b) { return a * b; };
constexpr auto relu = [](const Tensor& a, const Tensor&) { return a.relu(); };

// a + b without autograd: the C call plus the Tensor wrapper.
void BM_frontend_add_no_grad(benchmark::State& state) { time_op(state, false, false, add); }
BENCHMARK(BM_frontend_add_no_grad);

// a + b with a requiring grad: op call + Node recording, then the graph is freed.
void BM_frontend_add_autograd(benchmark::State& state) { time_op(state, true, false, add); }
BENCHMARK(BM_frontend_add_autograd);

// a * b, both requiring grad: saves both inputs for the rule.
void BM_frontend_mul_autograd(benchmark::State& state) { time_op(state, true, true, mul); }
BENCHMARK(BM_frontend_mul_autograd);

// relu without autograd (the backend's unary kernel cost, for comparison).
void BM_frontend_relu_no_grad(benchmark::State& state) { time_op(state, false, false, relu); }
BENCHMARK(BM_frontend_relu_no_grad);

// relu on a grad-requiring tensor (unary path, saves the output).
void BM_frontend_relu_autograd(benchmark::State& state) { time_op(state, true, false, relu); }
BENCHMARK(BM_frontend_relu_autograd);

// A recorded chain of 8 ops, then backward: per-op cost of forward + backward.
void BM_frontend_chain8_forward_backward(benchmark::State& state) {
  init_once();
  Tensor a = genesis::ones({1}, {.requires_grad = true}), b = genesis::ones({1});
  for (auto _ : state) {
    Tensor y = a;
    for (int i = 0; i < 8; ++i) y = y * b + b;
    y.backward();
    a.set_grad(Tensor());
  }
  state.SetItemsProcessed(state.iterations() * 16);  // 16 recorded ops per iteration
}
BENCHMARK(BM_frontend_chain8_forward_backward);

}  // namespace

BENCHMARK_MAIN();

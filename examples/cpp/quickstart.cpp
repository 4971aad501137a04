// quickstart.cpp - the Python quick start of the docs, in C++.
// Each block quotes the Python it mirrors; the C++ reads almost the same.
//
//   build/bin/quickstart            (runs on CUDA when available, else the CPU)
#include <cstdio>
#include <iostream>

#include "genesis/amp.hpp"
#include "genesis/autograd.hpp"
#include "genesis/memory.hpp"
#include "genesis/nn.hpp"
#include "genesis/optim.hpp"
#include "genesis/profiler.hpp"
#include "genesis/random.hpp"
#include "genesis/tensor.hpp"

namespace nn = genesis::nn;
namespace optim = genesis::optim;
using genesis::Tensor;

// class SimpleNet(nn.Module):
//     def __init__(self, input_dim, hidden_dim, output_dim):
//         super().__init__()
//         self.fc1 = nn.Linear(input_dim, hidden_dim)
//         self.relu = nn.ReLU()
//         self.fc2 = nn.Linear(hidden_dim, output_dim)
//         self.dropout = nn.Dropout(0.2)
//     def forward(self, x):
//         return self.fc2(self.dropout(self.relu(self.fc1(x))))
struct SimpleNet : nn::Module {
  nn::Linear fc1, fc2;
  nn::ReLU relu;
  nn::Dropout dropout{0.2};
  SimpleNet(int64_t input_dim, int64_t hidden_dim, int64_t output_dim)
      : fc1(input_dim, hidden_dim), fc2(hidden_dim, output_dim) {
    register_module("fc1", fc1);
    register_module("relu", relu);
    register_module("fc2", fc2);
    register_module("dropout", dropout);
  }
  Tensor forward(const Tensor& x) override { return fc2(dropout(relu(fc1(x)))); }
};

int main() {
  try {
    // x = genesis.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    // y = genesis.tensor([[2.0, 0.0], [0.0, 2.0]], requires_grad=True)
    // z = genesis.matmul(x, y); loss = z.sum(); loss.backward()
    auto x = genesis::tensor({{1.0, 2.0}, {3.0, 4.0}}, {.requires_grad = true});
    auto y = genesis::tensor({{2.0, 0.0}, {0.0, 2.0}}, {.requires_grad = true});
    auto z = genesis::matmul(x, y);
    auto loss = z.sum();
    loss.backward();
    std::cout << "Gradient of x: " << x.grad() << "\n";

    // genesis.manual_seed(42); device = genesis.device('cuda' if available else 'cpu')
    genesis::manual_seed(42);
    genesis::Device device = genesis::cuda_available() ? "cuda" : "cpu";
    std::cout << "device: " << device.str() << "\n";

    // model = SimpleNet(784, 256, 10).to(device)
    // optimizer = optim.AdamW(model.parameters(), lr=0.001); criterion = nn.CrossEntropyLoss()
    SimpleNet model(784, 256, 10);
    model.to(device);
    optim::AdamW optimizer(model.parameters(), {.lr = 0.001});
    nn::CrossEntropyLoss criterion;

    // for step in range(5):
    //     outputs = model(batch_data); loss = criterion(outputs, batch_labels)
    //     optimizer.zero_grad(); loss.backward()
    //     nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    //     optimizer.step()
    auto batch_data = genesis::randn({32, 784}, {.device = device});
    auto batch_labels = genesis::randint(0, 10, {32}, {.device = device});
    for (int step = 0; step < 5; ++step) {
      auto outputs = model(batch_data);
      auto step_loss = criterion(outputs, batch_labels);
      optimizer.zero_grad();
      step_loss.backward();
      genesis::clip_grad_norm_(model.parameters(), /*max_norm=*/1.0);
      optimizer.step();
      std::printf("step %d loss: %.4f\n", step, step_loss.item<double>());
    }

    // with genesis.autocast():  outputs = model(inputs); loss = criterion(outputs, targets)
    {
      genesis::amp::autocast ac(device.type(), genesis::bfloat16);
      auto outputs = model(batch_data);
      auto amp_loss = criterion(outputs, batch_labels);
      std::cout << "autocast: logits " << genesis::dtype_name(outputs.dtype()) << ", loss "
                << genesis::dtype_name(amp_loss.dtype()) << "\n";
      amp_loss.backward();  // gradients reach the float32 parameters
    }
    optimizer.step();

    // generator = genesis.Generator(); generator.manual_seed(12345)
    // state = genesis.get_rng_state(); ...; genesis.set_rng_state(state)
    // with genesis.fork_rng(): genesis.manual_seed(999)
    genesis::Generator generator(12345);
    auto r = genesis::rand({2, 2}, generator);
    auto state = genesis::get_rng_state();
    auto a = genesis::randn({3});
    genesis::set_rng_state(state);
    auto b = genesis::randn({3});
    std::cout << "same numbers after set_rng_state: " << std::boolalpha << (a.tolist() == b.tolist()) << "\n";
    const auto before_fork = genesis::get_rng_state();
    {
      genesis::ForkRng fork;
      genesis::manual_seed(999);
      (void)genesis::randn({100});
    }
    std::cout << "fork_rng restored the state: " << (genesis::get_rng_state() == before_fork) << "\n";

    // print(f"Memory allocated: {memory_allocated() / 1e6:.1f} MB")
    // stats = memory_stats(); stats['cache_hit_rate'], stats['peak_allocated']
    std::printf("Memory allocated: %.1f MB, reserved: %.1f MB\n", genesis::memory_allocated(device) / 1e6,
                genesis::memory_reserved(device) / 1e6);
    auto stats = genesis::memory_stats(device);
    std::printf("Cache hit rate: %.1f%%, peak allocated: %.2f MB\n", 100 * stats.cache_hit_rate(),
                stats.peak_allocated / 1e6);

    // with genesis.profiler.profile() as prof:
    //     x = genesis.rand(256, 256, device=device); y = genesis.matmul(x, x.T)
    // print(prof.summary())
    {
      genesis::Profiler prof("quickstart_trace.json");
      auto m = genesis::rand({256, 256}, {.device = device});
      auto mm = genesis::matmul(m, m.t());
      prof.stop();
      std::cout << prof.summary();
    }
    std::cout << "trace written to quickstart_trace.json (open it in https://ui.perfetto.dev)\n";
    (void)r;
    return 0;
  } catch (const genesis::Error& e) {
    std::cerr << "genesis: " << e.what() << "\n";
    return 1;
  }
}

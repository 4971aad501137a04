// tests/frontend/distributed/ddp_worker.cpp - one rank of the DDP tests
// (started by ddp_test through launch()).
//
// The oracle is a plain single-process run inside each rank: a second copy of
// the model, initialised as rank 0's, trained on the concatenation of every
// rank's batch (each rank can draw every rank's batch: batch(r, step) depends
// only on r and step).  Mean losses make the DDP average of the ranks'
// gradients equal to the gradient of the concatenated batch.
// Prints one line per mismatch; exit code 1 if any.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "genesis/autograd.hpp"
#include "genesis/distributed.hpp"
#include "genesis/distributed/ddp.hpp"
#include "genesis/data/dataloader.hpp"
#include "genesis/io.hpp"
#include "genesis/memory.hpp"
#include "genesis/nn/functional.hpp"
#include "genesis/nn/linear.hpp"
#include "genesis/optim/sgd.hpp"

namespace dist = genesis::distributed;
namespace nn = genesis::nn;
using genesis::Tensor;

namespace {

int g_failures = 0;
double g_worst_grad = 0;  // largest gradient error against the float64 oracle (reported by rank 0)

void expect(bool ok, const std::string& what) {
  if (ok) return;
  ++g_failures;
  dist::log("FAIL: " + what);
}

// x (B, 8) -> (B, 4); `spare` can be left out (unused-parameter tests).
struct Net : nn::Module {
  nn::Linear fc1{8, 16}, fc2{16, 16}, fc3{16, 4}, spare{16, 4};
  bool use_spare = true;
  Net() {
    register_module("fc1", fc1);
    register_module("fc2", fc2);
    register_module("fc3", fc3);
    register_module("spare", spare);
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = fc2(fc1(x).tanh()).tanh();
    Tensor y = fc3(h);
    return use_spare ? y + spare(h) : y;
  }
};

// x (B, 8) -> (B, 4) through `mid` twice, the first time inside a checkpointed region when asked.
// Registered a, out, mid: mid's bias and weight come first in the reverse-order buckets.
struct Tied : nn::Module {
  nn::Linear a{8, 16}, mid{16, 16}, out{16, 4};
  Tied() {
    register_module("a", a);
    register_module("out", out);
    register_module("mid", mid);
  }
  Tensor forward(const Tensor& x) override { return run(x, false); }
  Tensor run(const Tensor& x, bool checkpointed) {
    Tensor h = a(x).tanh();
    auto inner = [this](const std::vector<Tensor>& in) { return mid(in[0]).tanh(); };
    h = checkpointed ? genesis::autograd::checkpoint(inner, {h}) : inner({h});
    return out(mid(h).tanh());
  }
};

constexpr int64_t kBatch = 5;  // per rank, odd on purpose

// Rank r's batch at step s: inputs (kBatch, 8) and targets (kBatch, 4).
std::pair<Tensor, Tensor> batch(int r, int s) {
  genesis::manual_seed(1000 + 97 * (uint64_t)r + 7919 * (uint64_t)s);
  return {genesis::randn({kBatch, 8}), genesis::randn({kBatch, 4})};
}

// The batches of every rank at step s, concatenated along dim 0.
std::pair<Tensor, Tensor> global_batch(int ws, int s) {
  std::vector<double> xs, ys;
  for (int r = 0; r < ws; ++r) {
    auto [x, y] = batch(r, s);
    for (double v : x.tolist()) xs.push_back(v);
    for (double v : y.tolist()) ys.push_back(v);
  }
  return {genesis::tensor(xs, {ws * kBatch, 8}), genesis::tensor(ys, {ws * kBatch, 4})};
}

// The device the world group moves ($GENESIS_DIST_DEVICE: cpu for gloo, cuda for nccl).
genesis::Device dev() { return dist::world().device(); }

std::unique_ptr<Tied> make_tied(uint64_t seed) {
  genesis::manual_seed(seed);
  return std::make_unique<Tied>();
}

// A model initialised with seed (rank 0's init comes from seed 100).
std::unique_ptr<Net> make_net(uint64_t seed) {
  genesis::manual_seed(seed);
  return std::make_unique<Net>();
}

// The same initialisation in float64: the oracle's rounding error is negligible next to float32's.
std::unique_ptr<Net> make_ref(uint64_t seed) {
  auto m = make_net(seed);
  m->to(genesis::DType::f64);
  return m;
}

Tensor f64(const Tensor& t) { return t.to(genesis::DType::f64); }

std::string sci(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2e", x);
  return buf;
}

// ||a - b|| / ||b|| over all elements (b is the oracle, often float64).
double rel(const Tensor& a, const Tensor& b) {
  std::vector<double> x = a.tolist(), y = b.tolist();
  double d = 0, n = 0;
  for (size_t i = 0; i < x.size(); ++i) d += (x[i] - y[i]) * (x[i] - y[i]), n += y[i] * y[i];
  return n > 0 ? std::sqrt(d / n) : std::sqrt(d);
}

void compare_grads(nn::Module& got, nn::Module& want, double tol, const std::string& what) {
  auto g = got.named_parameters(), w = want.named_parameters();
  for (size_t i = 0; i < g.size(); ++i) {
    const Tensor gg = g[i].second.grad(), wg = w[i].second.grad();
    if (gg.defined() != wg.defined()) {
      expect(false, what + ": " + g[i].first + " grad defined " + std::to_string(gg.defined()) + " vs " +
                        std::to_string(wg.defined()));
      continue;
    }
    if (!gg.defined()) continue;
    const double e = rel(gg, wg);
    g_worst_grad = std::max(g_worst_grad, e);
    expect(e <= tol, what + ": " + g[i].first + " grad relative error " + std::to_string(e));
  }
}

// Every rank's copy of every parameter is bitwise the same.
void expect_replicas_equal(nn::Module& m, const std::string& what) {
  for (auto& [name, p] : m.named_parameters()) {
    auto parts = dist::world().all_gather(p.detach());
    for (size_t r = 1; r < parts.size(); ++r)
      expect(rel(parts[r], parts[0]) == 0,
             what + ": " + name + " differs between rank 0 and rank " + std::to_string(r));
  }
}

int run() {
  dist::init_process_group();
  const int ws = dist::get_world_size(), me = dist::get_rank();

  // ---- 1. one step: averaged gradients = the gradient of the concatenated batch
  {
    auto model = make_net(100 + me);
    model->to(dev());  // rank-dependent init: DDP must broadcast rank 0's
    auto ref = make_ref(100);
    dist::DDPOptions o;
    o.bucket_cap_mb = 300.0 / (1024 * 1024);  // ~300 bytes: several buckets
    dist::DistributedDataParallel ddp(*model, o);
    expect(ddp.bucket_indices().size() >= 4, "several buckets, got " + std::to_string(ddp.bucket_indices().size()));
    expect(ddp.bucket_indices().front().front() == 7, "the first bucket starts with the last registered parameter");
    auto [x, y] = batch(me, 0);
    nn::functional::mse_loss(ddp(x.to(dev())), y.to(dev())).backward();
    auto [gx, gy] = global_batch(ws, 0);
    nn::functional::mse_loss(ref->forward(f64(gx)), f64(gy)).backward();
    compare_grads(*model, *ref, 1e-6, "one step");
  }

  // ---- 2. many SGD steps: replicas stay bitwise equal and follow the single-process run
  {
    auto model = make_net(200 + me);
    model->to(dev());
    auto ref = make_ref(200);
    dist::DistributedDataParallel ddp(*model);  // default 25 MB: one bucket
    genesis::optim::SGD opt(model->parameters(), {.lr = 0.05, .momentum = 0.9});
    genesis::optim::SGD ref_opt(ref->parameters(), {.lr = 0.05, .momentum = 0.9});
    uint64_t held_after_5 = 0;
    for (int s = 1; s <= 30; ++s) {
      if (s == 6) held_after_5 = genesis::memory_allocated(dev());
      opt.zero_grad();
      ref_opt.zero_grad();
      auto [x, y] = batch(me, s);
      nn::functional::mse_loss(ddp(x.to(dev())), y.to(dev())).backward();
      opt.step();
      auto [gx, gy] = global_batch(ws, s);
      nn::functional::mse_loss(ref->forward(f64(gx)), f64(gy)).backward();
      ref_opt.step();
    }
    opt.zero_grad();
    expect(genesis::memory_allocated(dev()) <= held_after_5,
           "DDP keeps nothing from step to step: " + std::to_string(held_after_5) + " bytes allocated after 5 steps, " +
               std::to_string(genesis::memory_allocated(dev())) + " after 30");
    expect_replicas_equal(*model, "30 SGD steps");
    auto p = model->named_parameters(), q = ref->named_parameters();
    for (size_t i = 0; i < p.size(); ++i)
      if (p[i].second.grad().defined()) {
        const double e = rel(p[i].second, q[i].second);
        expect(e <= 1e-4,
               "30 SGD steps: " + p[i].first + " vs the single-process run, max relative error " + std::to_string(e));
      }
  }

  // ---- 3. no_sync: 3 micro-batches, the first two without communication = one large batch
  {
    auto model = make_net(300 + me);
    model->to(dev());
    auto ref = make_ref(300);
    dist::DDPOptions o;
    o.bucket_cap_mb = 500.0 / (1024 * 1024);
    dist::DistributedDataParallel ddp(*model, o);
    for (int s = 0; s < 3; ++s) {
      auto [x, y] = batch(me, 10 + s);
      Tensor loss = nn::functional::mse_loss(ddp(x.to(dev())), y.to(dev())) * (1.0 / 3);
      if (s < 2) {
        auto guard = ddp.no_sync();
        loss.backward();
        if (s == 0) {  // no communication happened: the gradient is this rank's own
          auto ref1 = make_ref(300);
          nn::functional::mse_loss(ref1->forward(f64(x)), f64(y)).backward();
          expect(rel(model->fc1.weight.grad() * 3, ref1->fc1.weight.grad()) <= 1e-6,
                 "no_sync: the gradient after one micro-batch is the local one");
        }
      } else {
        loss.backward();
      }
    }
    std::vector<double> xs, ys;
    for (int s = 0; s < 3; ++s)
      for (int r = 0; r < ws; ++r) {
        auto [x, y] = batch(r, 10 + s);
        for (double v : x.tolist()) xs.push_back(v);
        for (double v : y.tolist()) ys.push_back(v);
      }
    const int64_t n = 3 * ws * kBatch;
    nn::functional::mse_loss(ref->forward(genesis::tensor(xs, {n, 8}, {genesis::DType::f64})),
                             genesis::tensor(ys, {n, 4}, {genesis::DType::f64}))
        .backward();
    compare_grads(*model, *ref, 1e-6, "no_sync accumulation");
  }

  // ---- 4. unused parameters: `spare` is used on rank 0 only; fc_never does not exist anywhere
  {
    auto model = make_net(400 + me);
    model->to(dev());
    dist::DDPOptions o;
    o.find_unused_parameters = true;
    o.bucket_cap_mb = 300.0 / (1024 * 1024);
    dist::DistributedDataParallel ddp(*model, o);
    model->use_spare = me == 0;
    auto [x, y] = batch(me, 20);
    nn::functional::mse_loss(ddp(x.to(dev())), y.to(dev())).backward();
    // Oracle: the average over ranks of each rank's own gradient.
    std::vector<Tensor> sum;
    for (int r = 0; r < ws; ++r) {
      auto m = make_ref(400);
      m->use_spare = r == 0;
      // Parameters without a gradient on rank r contribute zeros to the average.
      auto [xr, yr] = batch(r, 20);
      nn::functional::mse_loss(m->forward(f64(xr)), f64(yr)).backward();
      auto ps = m->parameters();
      for (size_t i = 0; i < ps.size(); ++i) {
        Tensor g = ps[i].grad();
        if (!g.defined()) g = genesis::zeros(ps[i].shape(), {genesis::DType::f64});
        if ((int)sum.size() <= (int)i)
          sum.push_back(g.detach().clone());
        else
          sum[i] = sum[i] + g;
      }
    }
    auto ps = model->named_parameters();
    for (size_t i = 0; i < ps.size(); ++i) {
      const double e = rel(ps[i].second.grad(), sum[i] * (1.0 / ws));
      expect(e <= 1e-6, "find_unused_parameters: " + ps[i].first + " max relative error " + std::to_string(e));
    }
    expect(ddp.unused_parameters().empty(), "find_unused_parameters: spare is used on rank 0, so nowhere unused");
    // A second step where nobody uses spare: it stays without a gradient and is reported.
    model->zero_grad();
    model->use_spare = false;
    nn::functional::mse_loss(ddp(x.to(dev())), y.to(dev())).backward();
    expect(!model->spare.weight.grad().defined(), "a globally unused parameter keeps no gradient");
    expect(ddp.unused_parameters().size() == 2 && ddp.unused_parameters()[0] == "spare.weight",
           "unused_parameters names spare.weight and spare.bias");
    // Without find_unused_parameters the same model is an error naming the parameter, on every rank.
    auto strict_model = make_net(500);
    strict_model->to(dev());
    strict_model->use_spare = false;
    dist::DistributedDataParallel strict(*strict_model);
    try {
      nn::functional::mse_loss(strict(x.to(dev())), y.to(dev())).backward();
      expect(false, "no error for a parameter without a gradient");
    } catch (const genesis::Error& e) {
      expect(std::string(e.what()).find("spare.weight") != std::string::npos &&
                 std::string(e.what()).find("find_unused_parameters") != std::string::npos,
             std::string("the unused-parameter error names it: ") + e.what());
    }
  }

  // ---- 5. a checkpoint written by rank 0 only loads at any world size
  {
    auto model = make_net(600 + me);
    model->to(dev());
    dist::DistributedDataParallel ddp(*model);
    const std::string path = std::string(std::getenv("GENESIS_DDP_TEST_DIR")) + "/ddp_ckpt.safetensors";
    dist::save_on_rank0([&] { genesis::save(ddp.module().state_dict(), path); });
    auto fresh = make_net(9999);  // a different init, as a process of another world size would have
    fresh->load_state_dict(genesis::load(path));
    auto a = model->named_parameters(), b = fresh->named_parameters();
    for (size_t i = 0; i < a.size(); ++i)
      expect(rel(a[i].second, b[i].second) == 0, "checkpoint: " + a[i].first + " differs after loading");
  }

  // ---- 6. data sharding: DistributedSampler and DataLoader(num_replicas, rank) agree and cover the data
  {
    const int64_t n = 23;  // not a multiple of the world size: padding
    dist::DistributedSampler sampler(n, -1, -1, true, 5);
    sampler.set_epoch(3);
    std::vector<int64_t> mine = sampler.indices();
    auto ds = std::make_shared<genesis::data::TensorDataset>(std::vector<Tensor>{genesis::arange(double(n))});
    genesis::data::DataLoader loader(ds, {.batch_size = 4, .shuffle = true, .seed = 5, .num_replicas = ws, .rank = me});
    expect(loader.indices(3) == mine, "DataLoader(num_replicas, rank) serves the sampler's indices");
    expect((int64_t)mine.size() == (n + ws - 1) / ws, "every rank gets ceil(n / world) indices");
    std::vector<double> local(mine.begin(), mine.end());
    auto all = dist::world().all_gather(genesis::tensor(local, {(int64_t)local.size()}, {genesis::DType::f64, dev()}));
    std::vector<int> seen(n, 0);
    for (auto& t : all)
      for (double v : t.tolist()) seen[(size_t)v]++;
    for (int64_t i = 0; i < n; ++i) expect(seen[i] >= 1, "index " + std::to_string(i) + " served by no rank");
  }

  // ---- 7. both ways of handing results back, for buckets of one and of several parameters, with
  // a layer used inside and outside an activation-checkpointed region (its gradient is accumulated
  // twice in one backward, the second time after its bucket was launched: it must be all-reduced
  // again) and .grad tensors kept across steps (zero_grad(false))
  for (double cap_bytes : {1100.0, 300.0})
    for (bool as_view : {true, false}) {
      const std::string what = std::string("gradient_as_bucket_view=") + (as_view ? "true" : "false") +
                               ", buckets of " + std::to_string((int)cap_bytes) + " bytes";
      auto model = make_tied(700 + me);
      model->to(dev());
      auto ref = make_tied(700);
      ref->to(genesis::DType::f64);
      dist::DDPOptions o;
      o.gradient_as_bucket_view = as_view;
      o.bucket_cap_mb = cap_bytes / (1024 * 1024);
      dist::DistributedDataParallel ddp(*model, o);
      const size_t first = ddp.bucket_indices().front().size();
      expect(first == (cap_bytes > 1000 ? 2u : 1u),
             what + ": the first bucket holds mid's " + (cap_bytes > 1000 ? "bias and weight" : "bias"));
      genesis::optim::SGD opt(model->parameters(), {.lr = 0.05});
      genesis::optim::SGD ref_opt(ref->parameters(), {.lr = 0.05});
      for (int s = 0; s < 3; ++s) {
        opt.zero_grad(false);
        ref_opt.zero_grad(false);
        const Tensor held = model->out.weight.grad();  // defined from the second step on
        auto [x, y] = batch(me, 40 + s);
        ddp.prepare_forward();
        nn::functional::mse_loss(model->run(x.to(dev()), true), y.to(dev())).backward();
        auto [gx, gy] = global_batch(ws, 40 + s);
        nn::functional::mse_loss(ref->run(f64(gx), false), f64(gy)).backward();
        compare_grads(*model, *ref, 1e-6, what + ", step " + std::to_string(s));
        if (!as_view && held.defined())
          expect(model->out.weight.grad().is_same(held) && rel(held, ref->out.weight.grad()) <= 1e-6,
                 what + ": the .grad tensor held from before backward holds the average");
        opt.step();
        ref_opt.step();
      }
      expect_replicas_equal(*model, what);
    }

  // ---- 8. reduce_dtype = bf16: the average is rounded to bf16, for buckets of one and of several
  // parameters, and the replicas stay identical
  for (double cap_bytes : {1100.0, 300.0}) {
    const std::string what = "reduce_dtype=bf16, buckets of " + std::to_string((int)cap_bytes) + " bytes";
    auto model = make_net(800 + me);
    model->to(dev());
    auto ref = make_ref(800);
    dist::DDPOptions o;
    o.reduce_dtype = genesis::DType::bf16;
    o.bucket_cap_mb = cap_bytes / (1024 * 1024);
    dist::DistributedDataParallel ddp(*model, o);
    genesis::optim::SGD opt(model->parameters(), {.lr = 0.05});
    for (int s = 0; s < 3; ++s) {
      opt.zero_grad();
      auto [x, y] = batch(me, 50 + s);
      nn::functional::mse_loss(ddp(x.to(dev())), y.to(dev())).backward();
      if (s == 0) {
        auto [gx, gy] = global_batch(ws, 50);
        nn::functional::mse_loss(ref->forward(f64(gx)), f64(gy)).backward();
        double worst = 0;
        auto g = model->named_parameters(), w = ref->named_parameters();
        for (size_t i = 0; i < g.size(); ++i) {
          expect(g[i].second.grad().dtype() == genesis::DType::f32, what + ": " + g[i].first + " grad stays f32");
          const double e = rel(g[i].second.grad(), w[i].second.grad());
          worst = std::max(worst, e);
          expect(e <= 1e-2, what + ": " + g[i].first + " grad relative error " + std::to_string(e));
        }
        // bf16 keeps 8 significant bits: an error this small means nothing was rounded.
        expect(worst > 1e-5, what + ": the largest error " + std::to_string(worst) + " shows no bf16 rounding");
      }
      opt.step();
    }
    expect_replicas_equal(*model, what);
  }

  dist::log0("ddp done, world size " + std::to_string(ws) + ", largest gradient error vs the float64 oracle " +
             sci(g_worst_grad));
  dist::destroy_process_group();
  return g_failures ? 1 : 0;
}

}  // namespace

int main() {
  try {
    return run();
  } catch (const std::exception& e) {
    dist::log(std::string("FAIL: ") + e.what());
    return 1;
  }
}

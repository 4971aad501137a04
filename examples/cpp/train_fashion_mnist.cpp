// train_fashion_mnist.cpp - trains an MLP or a small CNN on Fashion-MNIST on
// the best available device (cuda if there is one, else cpu), with a progress
// bar, train loss and test accuracy per epoch, a full training checkpoint
// written every epoch and --resume that continues to the bit.
//
//   train_fashion_mnist --model mlp --epochs 10
//   train_fashion_mnist --model cnn --resume fashion_mnist_cnn.ckpt.safetensors
//
// The PyTorch equivalent of the loop below:
//   for epoch in range(start, epochs):
//       for x, y in loader: opt.zero_grad(); loss = F.cross_entropy(model(x), y); loss.backward(); opt.step()
//       sched.step(); evaluate(); torch.save({...}, ckpt)
//
// Reproducibility: the parameters are drawn from the default generator seeded
// with --seed, dropout draws from the device's default generator, and the
// shuffle order of epoch e depends only on (seed, e).  The checkpoint holds
// the model, the optimizer (Adam moments and step counts), the scheduler,
// every default generator's state, the step and the epoch, so a resumed run
// computes exactly what the uninterrupted run would have.
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "genesis/autograd.hpp"
#include "genesis/data/dataloader.hpp"
#include "genesis/data/fashion_mnist.hpp"
#include "genesis/distributed/ddp.hpp"
#include "genesis/io.hpp"
#include "genesis/nn.hpp"
#include "genesis/optim.hpp"
#include "genesis/profiler.hpp"
#include "genesis/random.hpp"

#ifndef TRAIN_DEFAULT_MODEL
#define TRAIN_DEFAULT_MODEL "mlp"  // --model default
#endif

namespace gs = genesis;
namespace nn = genesis::nn;
namespace F = genesis::nn::functional;
using gs::Tensor;
using Clock = std::chrono::steady_clock;

namespace {

// ------------------------------------------------------------------ models

// 784 -> 512 -> 256 -> 10 with ReLU and dropout 0.2 (~535k parameters).
struct MLP : nn::Module {
  nn::Flatten flatten;
  nn::Linear fc1{784, 512}, fc2{512, 256}, fc3{256, 10};
  nn::ReLU relu;
  nn::Dropout drop{0.2};
  MLP() {
    register_module("fc1", fc1);
    register_module("fc2", fc2);
    register_module("fc3", fc3);
    register_module("drop", drop);  // so that eval() turns dropout off
  }
  Tensor forward(const Tensor& x) override {  // x (N, 1, 28, 28) -> logits (N, 10)
    Tensor h = drop(relu(fc1(flatten(x))));
    h = drop(relu(fc2(h)));
    return fc3(h);
  }
  std::string name() const override { return "MLP"; }
};

// Two 3x3 convolutions with 2x2 max pooling, then two linear layers (206,922 parameters):
// (N,1,28,28) -> conv 16 -> (N,16,14,14) -> conv 32 -> (N,32,7,7) -> 128 -> 10.
struct CNN : nn::Module {
  nn::Conv2d conv1{1, 16, 3, 1, 1}, conv2{16, 32, 3, 1, 1};
  nn::MaxPool2d pool{2};
  nn::Flatten flatten;
  nn::Linear fc1{32 * 7 * 7, 128}, fc2{128, 10};
  nn::ReLU relu;
  CNN() {
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = pool(relu(conv1(x)));
    h = pool(relu(conv2(h)));
    return fc2(relu(fc1(flatten(h))));
  }
  std::string name() const override { return "CNN"; }
};

// ------------------------------------------------------------------ config

struct Config {
  std::string model = TRAIN_DEFAULT_MODEL;
  int64_t epochs = 10;
  int64_t batch_size = 64;
  double lr = 1e-3;
  uint64_t seed = 0;
  int threads = 0;  // 0: every core
  std::string device;
  std::string data = gs::data::kFashionMNISTDefaultRoot;
  std::string checkpoint;  // "": fashion_mnist_<model>.ckpt.safetensors; "none": no checkpoint
  std::string resume;
  std::string log;      // per-step losses as hex floats, for bit-exact comparisons
  std::string profile;  // Chrome trace of the first epoch's training steps
  int64_t limit_train = 0, limit_test = 0;
  int64_t stop_after = 0;  // stop after this many epochs of this run (simulates an interruption)
  bool no_eval = false;
  std::string progress = "auto";
};

// --------------------------------------------------------------- progress

// One line updated in place on a terminal; plain lines (5 per epoch) otherwise.
class Progress {
 public:
  Progress(bool tty, int64_t epoch, int64_t epochs, int64_t total)
      : tty_(tty), epoch_(epoch), epochs_(epochs), total_(total), start_(Clock::now()), last_(start_) {}

  bool due(int64_t done) const {
    if (done == total_) return true;
    if (tty_) return Clock::now() - last_ > std::chrono::milliseconds(100);
    return done % std::max<int64_t>(1, total_ / 5) == 0;
  }

  void show(int64_t done, double running_loss) {
    last_ = Clock::now();
    const double secs = std::chrono::duration<double>(last_ - start_).count();
    const double rate = secs > 0 ? double(done) / secs : 0.0;
    char line[256];
    if (tty_) {
      const int width = 30, fill = static_cast<int>(width * done / std::max<int64_t>(1, total_));
      std::string bar(static_cast<size_t>(fill), '=');
      if (fill < width) bar += '>';
      bar.resize(width, ' ');
      std::snprintf(line, sizeof line,
                    "\r\033[Kepoch %" PRId64 "/%" PRId64 " [%s] %" PRId64 "/%" PRId64 "  %.1f batch/s  loss %.4f",
                    epoch_, epochs_, bar.c_str(), done, total_, rate, running_loss);
      std::fputs(line, stdout);
    } else {
      std::printf("epoch %" PRId64 "/%" PRId64 "  batch %" PRId64 "/%" PRId64 "  %.1f batch/s  loss %.4f\n", epoch_,
                  epochs_, done, total_, rate, running_loss);
    }
    std::fflush(stdout);
  }

  void finish() {
    if (tty_) std::fputs("\r\033[K", stdout);
  }

 private:
  bool tty_;
  int64_t epoch_, epochs_, total_;
  Clock::time_point start_, last_;
};

// ------------------------------------------------------------------ helpers

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// FNV-1a over the bytes of every tensor of a state dict, in order: a
// fingerprint of the parameters that changes with any bit.
uint64_t fingerprint(const std::map<std::string, Tensor>& sd) {
  uint64_t h = 1469598103934665603ull;
  for (const auto& [name, t] : sd) {
    Tensor c = t.to(gs::Device("cpu")).contiguous();
    std::vector<unsigned char> b(static_cast<size_t>(c.numel()) * gn_dtype_size(static_cast<int32_t>(c.dtype())));
    if (!b.empty()) gs::check(gn_tensor_to_host(c.handle(), b.data(), b.size()), "fingerprint");
    for (char ch : name) h = (h ^ static_cast<unsigned char>(ch)) * 1099511628211ull;
    for (unsigned char x : b) h = (h ^ x) * 1099511628211ull;
  }
  return h;
}

// The first n rows (all when n <= 0) of a dataset, as a TensorDataset.
std::shared_ptr<gs::data::TensorDataset> head(const gs::data::FashionMNIST& ds, int64_t n) {
  if (n <= 0 || n >= ds.size()) return std::make_shared<gs::data::TensorDataset>(ds.tensors());
  return std::make_shared<gs::data::TensorDataset>(
      std::vector<Tensor>{ds.images().slice(0, 0, n).contiguous(), ds.labels().slice(0, 0, n).contiguous()});
}

struct EvalResult {
  double loss = 0;
  int64_t correct = 0, total = 0;
};

// Mean cross-entropy and accuracy over the dataset, in eval mode, without recording.
EvalResult evaluate(nn::Module& model, const gs::data::TensorDataset& ds) {
  gs::NoGradGuard no_grad;
  model.eval();
  EvalResult r;
  const Tensor& x = ds.tensors()[0];
  const Tensor& y = ds.tensors()[1];
  const int64_t n = ds.size(), bs = 1000;
  Tensor loss_sum, correct;
  for (int64_t lo = 0; lo < n; lo += bs) {
    const int64_t hi = std::min(n, lo + bs);
    Tensor xb = x.slice(0, lo, hi), yb = y.slice(0, lo, hi);
    Tensor logits = model(xb);
    Tensor l = F::cross_entropy(logits, yb, -100, "sum");
    Tensor c = (logits.argmax(1) == yb).sum();
    loss_sum = loss_sum.defined() ? loss_sum + l : l;
    correct = correct.defined() ? correct + c : c;
  }
  model.train();
  r.total = n;
  if (n) {
    r.loss = loss_sum.item<double>() / double(n);
    r.correct = correct.item<int64_t>();
  }
  return r;
}

// ----------------------------------------------------------- number fields
//
// Every number the program reads, from the command line or from a checkpoint,
// goes through these: the whole text must be the number, in range, and an
// error names the field (a bare std::stod would say only "stod").

// An integer in [lo, hi]; `field` names it in the error.
int64_t parse_int(const std::string& field, const std::string& text, int64_t lo, int64_t hi) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end || errno == ERANGE || v < lo || v > hi)
    throw gs::Error(GN_ERR_INVALID_ARGUMENT, field + " must be an integer in [" + std::to_string(lo) + ", " +
                                                 std::to_string(hi) + "], got '" + text + "'");
  return v;
}

// A non-negative 64-bit integer (seeds).
uint64_t parse_u64(const std::string& field, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos || *end || errno == ERANGE)
    throw gs::Error(GN_ERR_INVALID_ARGUMENT, field + " must be an integer in [0, 2^64), got '" + text + "'");
  return v;
}

// A finite number > 0 (learning rates).
double parse_positive(const std::string& field, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end || errno == ERANGE || !std::isfinite(v) || v <= 0)
    throw gs::Error(GN_ERR_INVALID_ARGUMENT, field + " must be a finite number > 0, got '" + text + "'");
  return v;
}

constexpr int64_t kMaxCount = INT64_MAX;

std::string ckpt_value(const gs::Checkpoint& ck, const std::string& key) {
  auto it = ck.user.find(key);
  if (it == ck.user.end())
    throw gs::Error(GN_ERR_IO, "checkpoint has no '" + key + "' entry: not written by this program");
  return it->second;
}

// A checkpoint's settings are checked like the command line's.
std::string ckpt_field(const std::string& file, const std::string& key) {
  return "checkpoint " + file + ": entry '" + key + "'";
}

// ------------------------------------------------------------------ training

int run(Config cfg, const std::map<std::string, bool>& given) {
  // --threads must reach the CPU backend before the runtime is created.
  if (cfg.threads > 0) setenv("GENESIS_NUM_THREADS", std::to_string(cfg.threads).c_str(), 1);
  const gs::Device device =
      gs::distributed::local_device(cfg.device.empty() ? (gs::cuda_available() ? "cuda" : "cpu") : cfg.device);
  // Under `genesis launch` (docs/distributed.md): one shard of each epoch per rank, gradients
  // averaged by DDP, rank 0 prints and writes the checkpoint.
  const bool dp = gs::distributed::init_from_env(device);
  const int world = gs::distributed::get_world_size(), rank = gs::distributed::get_rank();
  if (rank != 0 && !std::freopen("/dev/null", "w", stdout)) throw gs::Error(GN_ERR_IO, "cannot silence stdout");

  // A resumed run takes its settings from the checkpoint unless told otherwise.
  std::optional<gs::Checkpoint> ck;
  if (!cfg.resume.empty()) {
    ck = gs::load_checkpoint(cfg.resume, device);
    const std::string model = ckpt_value(*ck, "model");
    if (given.at("model") && model != cfg.model)
      throw gs::Error(GN_ERR_INVALID_ARGUMENT, cfg.resume + " holds a '" + model + "' model, not '" + cfg.model +
                                                   "': resume without --model, or with --model " + model);
    if (model != "mlp" && model != "cnn")
      throw gs::Error(GN_ERR_INVALID_ARGUMENT, ckpt_field(cfg.resume, "model") + " is '" + model + "', not mlp or cnn");
    cfg.model = model;
    auto field = [&](const char* key) { return ckpt_field(cfg.resume, key); };
    if (!given.at("epochs")) cfg.epochs = parse_int(field("epochs"), ckpt_value(*ck, "epochs"), 1, kMaxCount);
    if (!given.at("batch-size"))
      cfg.batch_size = parse_int(field("batch_size"), ckpt_value(*ck, "batch_size"), 1, kMaxCount);
    if (!given.at("seed")) cfg.seed = parse_u64(field("seed"), ckpt_value(*ck, "seed"));
    if (!given.at("lr")) cfg.lr = parse_positive(field("lr"), ckpt_value(*ck, "lr"));
    if (!given.at("limit-train"))
      cfg.limit_train = parse_int(field("limit_train"), ckpt_value(*ck, "limit_train"), 0, kMaxCount);
  }
  if (cfg.epochs < 1) throw gs::Error(GN_ERR_INVALID_ARGUMENT, "--epochs must be >= 1");
  if (cfg.checkpoint.empty()) cfg.checkpoint = "fashion_mnist_" + cfg.model + ".ckpt.safetensors";
  const bool tty = cfg.progress == "bar" || (cfg.progress == "auto" && isatty(STDOUT_FILENO));

  // Data: both splits live on the device, whole; batches are index_selects.
  auto t0 = Clock::now();
  const gs::data::FashionMNIST train_full(cfg.data, true, {.device = device});
  const gs::data::FashionMNIST test_full(cfg.data, false, {.device = device});
  auto train_ds = head(train_full, cfg.limit_train);
  auto test_ds = head(test_full, cfg.limit_test);
  gs::data::DataLoader loader(
      train_ds, {.batch_size = cfg.batch_size, .shuffle = true, .seed = cfg.seed, .num_replicas = world, .rank = rank});
  std::printf("Fashion-MNIST: %" PRId64 " train / %" PRId64 " test images on %s (loaded in %.2f s)\n", train_ds->size(),
              test_ds->size(), device.str().c_str(), seconds_since(t0));

  // Model, optimizer, scheduler: Adam with a cosine learning rate over the epochs.
  gs::manual_seed(cfg.seed);
  std::unique_ptr<nn::Module> model;
  if (cfg.model == "mlp")
    model = std::make_unique<MLP>();
  else if (cfg.model == "cnn")
    model = std::make_unique<CNN>();
  else
    throw gs::Error(GN_ERR_INVALID_ARGUMENT, "unknown --model '" + cfg.model + "' (mlp or cnn)");
  model->to(device);
  int64_t n_params = 0;
  for (const Tensor& p : model->parameters()) n_params += p.numel();
  gs::optim::Adam opt(model->parameters(), {.lr = cfg.lr});
  gs::optim::CosineAnnealingLR sched(opt, cfg.epochs);

  // What the checkpoint holds: model, optimizer, scheduler, RNG states, step, epoch.
  gs::TrainingState state{.model = model.get(), .optimizer = &opt, .scheduler = &sched};
  if (ck) {
    // The model tag matched, so a mismatch here means the file was changed or
    // written by another build: say so before the state-dict details.
    try {
      gs::restore_training_state(*ck, state);  // checked first: all or nothing
    } catch (const gs::Error& e) {
      throw gs::Error(e.code(), cfg.resume + " does not fit this program's '" + cfg.model + "' model (" +
                                    model->name() + "): " + e.what());
    }
    std::printf("resumed from %s: epoch %" PRId64 ", step %" PRId64 "\n", cfg.resume.c_str(), state.epoch, state.step);
  }
  std::optional<gs::distributed::DistributedDataParallel> ddp;
  if (dp) ddp.emplace(*model);  // after a resume: every rank restored the same state
  const int64_t start_epoch = state.epoch;
  int64_t step = state.step;
  std::printf("model %s (%" PRId64 " parameters), Adam lr %g, cosine schedule over %" PRId64 " epochs, batch %" PRId64
              ", seed %" PRIu64 "\n",
              model->name().c_str(), n_params, cfg.lr, cfg.epochs, cfg.batch_size, cfg.seed);

  std::FILE* log = nullptr;
  if (!cfg.log.empty() && rank == 0 && !(log = std::fopen(cfg.log.c_str(), "w")))
    throw gs::Error(GN_ERR_IO, "cannot open --log " + cfg.log);

  int64_t epochs_this_run = 0;
  for (int64_t epoch = start_epoch; epoch < cfg.epochs; ++epoch) {
    if (cfg.stop_after > 0 && epochs_this_run == cfg.stop_after) {
      std::printf("stopping after %" PRId64 " epoch(s) as asked (--stop-after); resume with --resume %s\n",
                  epochs_this_run, cfg.checkpoint.c_str());
      break;
    }
    model->train();
    loader.set_epoch(epoch);
    Progress bar(tty, epoch + 1, cfg.epochs, loader.size());
    std::optional<gs::Profiler> prof;
    if (!cfg.profile.empty() && epochs_this_run == 0) prof.emplace(cfg.profile);

    // Loss summed on the device (sample-weighted); read back only when the
    // progress bar or the log needs it, so a GPU is not synchronized per step.
    Tensor loss_sum = gs::zeros({}, {.device = device});
    int64_t seen = 0, done = 0;
    const auto t_epoch = Clock::now();
    for (const gs::data::Example& b : loader) {
      const Tensor& x = b[0];
      const Tensor& y = b[1];
      opt.zero_grad();
      Tensor loss = F::cross_entropy(ddp ? (*ddp)(x) : (*model)(x), y);
      loss.backward();
      opt.step();
      ++step;
      ++done;
      seen += y.size(0);
      {
        gs::NoGradGuard no_grad;
        loss_sum.add_(loss.detach() * double(y.size(0)));
      }
      if (log) std::fprintf(log, "step %" PRId64 " loss %a\n", step, loss.item<float>());
      if (bar.due(done)) bar.show(done, loss_sum.item<double>() / double(seen));
    }
    const double train_secs = seconds_since(t_epoch);
    const double train_loss = loss_sum.item<double>() / double(std::max<int64_t>(1, seen));
    bar.finish();
    if (prof) {
      prof->stop();
      std::cout << prof->summary();
      std::printf("profile of epoch %" PRId64 " written to %s\n", epoch + 1, cfg.profile.c_str());
      prof.reset();
    }
    sched.step();

    EvalResult ev;
    const auto t_eval = Clock::now();
    if (!cfg.no_eval) ev = evaluate(*model, *test_ds);
    const double eval_secs = seconds_since(t_eval);

    const auto sd = std::map<std::string, Tensor>(model->state_dict());
    std::printf("epoch %" PRId64 "/%" PRId64 "  train loss %.9g", epoch + 1, cfg.epochs, train_loss);
    if (!cfg.no_eval)
      std::printf("  test loss %.4f  test acc %.2f%% (%" PRId64 "/%" PRId64 ")", ev.loss,
                  100.0 * double(ev.correct) / double(std::max<int64_t>(1, ev.total)), ev.correct, ev.total);
    std::printf("  train %.3f s (%.1f batch/s)  eval %.2f s\n", train_secs, double(done) / train_secs, eval_secs);
    if (log) {
      std::fprintf(log, "epoch %" PRId64 " train_loss %a test_loss %a correct %" PRId64 " params %016" PRIx64 "\n",
                   epoch + 1, train_loss, ev.loss, ev.correct, fingerprint(sd));
      std::fflush(log);
    }

    // The full training state, atomically (a crash leaves the previous file intact).
    if (cfg.checkpoint != "none") {
      state.step = step;
      state.epoch = epoch + 1;
      state.user = {{"model", cfg.model},
                    {"epochs", std::to_string(cfg.epochs)},
                    {"batch_size", std::to_string(cfg.batch_size)},
                    {"seed", std::to_string(cfg.seed)},
                    {"lr",
                     [&] {
                       char s[64];
                       std::snprintf(s, sizeof s, "%.17g", cfg.lr);
                       return std::string(s);
                     }()},
                    {"limit_train", std::to_string(cfg.limit_train)}};
      gs::distributed::save_on_rank0([&] { gs::save_training_checkpoint(cfg.checkpoint, state); });
    }
    ++epochs_this_run;
    std::fflush(stdout);
  }
  if (log) std::fclose(log);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  CLI::App app{
      "Trains an MLP or a small CNN on Fashion-MNIST with Genesis (progress bar, per-epoch "
      "test accuracy, a checkpoint every epoch, --resume)."};
  std::map<std::string, CLI::Option*> opts;
  opts["model"] = app.add_option("--model", cfg.model, "mlp or cnn")->check(CLI::IsMember({"mlp", "cnn"}));
  // Numbers are taken as text and converted by parse_* (named errors, no NaN,
  // no negative counts); a leading '-' must not read as an option name.
  std::map<std::string, std::string> num;  // option -> text given
  auto number = [&](const char* name, const std::string& fallback, const std::string& help) {
    num[name] = fallback;
    return app.add_option(std::string("--") + name, num[name], help)->capture_default_str();
  };
  opts["epochs"] = number("epochs", std::to_string(cfg.epochs), "epochs in all (>= 1)");
  opts["batch-size"] = number("batch-size", std::to_string(cfg.batch_size), "examples per step (>= 1)");
  opts["lr"] = number("lr", "0.001", "Adam's initial learning rate (finite, > 0)");
  opts["seed"] = number("seed", "0", "seed of the initialisation, dropout and shuffling (>= 0)");
  number("threads", "0", "CPU threads (default 0: every core)");
  app.add_option("--device", cfg.device, "cpu, cuda, cuda:1, ... (default: cuda when available)");
  app.add_option("--data", cfg.data, "directory of the IDX files (plain or .gz)")->capture_default_str();
  app.add_option("--checkpoint", cfg.checkpoint,
                 "checkpoint written after every epoch (default: fashion_mnist_<model>.ckpt.safetensors; "
                 "'none': no checkpoint)");
  app.add_option("--resume", cfg.resume, "continue the run saved in this checkpoint");
  opts["limit-train"] = number("limit-train", "0", "use only the first N training images (0: all)");
  number("limit-test", "0", "use only the first N test images (0: all)");
  number("stop-after", "0", "stop after N epochs of this run (as if interrupted; 0: never)");
  app.add_option("--log", cfg.log, "write every step's loss (hex float) and per-epoch results to this file");
  app.add_option("--profile", cfg.profile, "profile the first epoch: Chrome trace to this file + op summary");
  app.add_flag("--no-eval", cfg.no_eval, "skip the test-set evaluation");
  app.add_option("--progress", cfg.progress, "auto (a bar on a terminal), bar, or lines")
      ->check(CLI::IsMember({"auto", "bar", "lines"}));
  CLI11_PARSE(app, argc, argv);
  std::map<std::string, bool> given;
  for (const auto& [k, o] : opts) given[k] = o->count() > 0;
  try {
    cfg.epochs = parse_int("--epochs", num["epochs"], 1, kMaxCount);
    cfg.batch_size = parse_int("--batch-size", num["batch-size"], 1, kMaxCount);
    cfg.lr = parse_positive("--lr", num["lr"]);
    cfg.seed = parse_u64("--seed", num["seed"]);
    cfg.threads = static_cast<int>(parse_int("--threads", num["threads"], 0, 4096));
    cfg.limit_train = parse_int("--limit-train", num["limit-train"], 0, kMaxCount);
    cfg.limit_test = parse_int("--limit-test", num["limit-test"], 0, kMaxCount);
    cfg.stop_after = parse_int("--stop-after", num["stop-after"], 0, kMaxCount);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train_fashion_mnist: %s\n", e.what());
    return 2;
  }
  try {
    return run(cfg, given);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "train_fashion_mnist: %s\n", e.what());
    return 1;
  }
}

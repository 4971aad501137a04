// training_checkpoint_test.cpp - save_training_checkpoint / load_training_checkpoint:
// resuming gives the same losses to the bit as an uninterrupted run (model,
// Adam state, scheduler, GradScaler, RNG for dropout and data), and every bad
// file - truncated, corrupted, or not matching the model/optimizer/scheduler -
// throws a clear error and changes nothing.
#include "common.h"

#include <cstring>

#include "genesis/amp.hpp"
#include "genesis/nn.hpp"
#include "genesis/optim.hpp"
#include "genesis/random.hpp"

using namespace genesis;
using iotest::expect_error;

namespace {

struct Net : nn::Module {
  nn::Linear fc1{6, 8}, fc2{8, 3};
  nn::Dropout drop{0.25};
  Net() {
    register_module("fc1", fc1);
    register_module("drop", drop);
    register_module("fc2", fc2);
  }
  Tensor forward(const Tensor& x) override { return fc2(drop(fc1(x).relu())); }
};

// One run: model, Adam, StepLR, GradScaler; the data and dropout masks come from the default generator.
struct TrainRun {
  Net model;
  optim::Adam opt{model.parameters(), {.lr = 0.01}};
  optim::StepLR sched{opt, 2, 0.5};
  amp::GradScaler scaler{{.init_scale = 1024}};
  nn::CrossEntropyLoss criterion;
  TrainingState state() { return {&model, &opt, &sched, &scaler}; }
  double step() {
    Tensor x = randn({5, 6});
    Tensor y = randint(0, 3, {5});
    Tensor loss = criterion(model(x), y);
    opt.zero_grad();
    scaler.scale(loss).backward();
    scaler.step(opt);
    scaler.update();
    sched.step();
    return loss.item<double>();
  }
};

// Everything a failed load must leave untouched.
struct Snapshot {
  std::map<std::string, std::vector<double>> model, optim;
  std::map<std::string, double> sched, scaler;
  RngState rng;
  explicit Snapshot(TrainRun& r) {
    for (const auto& [k, t] : r.model.state_dict()) model[k] = t.tolist();
    for (const auto& [k, t] : r.opt.flat_state()) optim[k] = t.tolist();
    sched = r.sched.state_dict();
    scaler = r.scaler.state_dict();
    rng = get_rng_state();
  }
  bool operator==(const Snapshot& o) const {
    return model == o.model && optim == o.optim && sched == o.sched && scaler == o.scaler && rng == o.rng;
  }
};

class TrainingCheckpoint : public iotest::TempDirTest {};

}  // namespace

TEST_F(TrainingCheckpoint, ResumeIsBitIdentical) {
  // Uninterrupted: 7 steps.
  manual_seed(11);
  TrainRun a;
  std::vector<double> straight;
  for (int i = 0; i < 7; ++i) straight.push_back(a.step());

  // Interrupted after 3 steps, resumed in fresh objects built under another seed.
  manual_seed(11);
  std::vector<double> resumed;
  const std::string path = dir + "/run.ckpt.safetensors";
  {
    TrainRun b;
    for (int i = 0; i < 3; ++i) resumed.push_back(b.step());
    TrainingState st = b.state();
    st.step = 3;
    st.epoch = 1;
    st.user = {{"note", "after step 3"}};
    save_training_checkpoint(path, st);
  }
  manual_seed(999);  // a different init and RNG position: the checkpoint must override both
  TrainRun c;
  TrainingState st = c.state();
  Checkpoint ck = load_training_checkpoint(path, st);
  EXPECT_EQ(st.step, 3);
  EXPECT_EQ(st.epoch, 1);
  EXPECT_EQ(st.user.at("note"), "after step 3");
  EXPECT_EQ(c.sched.get_last_lr()[0], 0.005);  // StepLR(2, 0.5) after 3 steps
  for (int i = 3; i < 7; ++i) resumed.push_back(c.step());
  ASSERT_EQ(resumed.size(), straight.size());
  for (size_t i = 0; i < straight.size(); ++i)
    EXPECT_EQ(std::memcmp(&resumed[i], &straight[i], sizeof(double)), 0)
        << "step " << i << ": " << resumed[i] << " vs " << straight[i];
  // Same final weights, to the bit.
  for (const auto& [k, t] : a.model.state_dict()) EXPECT_EQ(t.tolist(), c.model.state_dict().at(k).tolist()) << k;
}

TEST_F(TrainingCheckpoint, BadFilesChangeNothing) {
  manual_seed(5);
  const std::string path = dir + "/good.ckpt.safetensors";
  {
    TrainRun r;
    r.step();
    TrainingState st = r.state();
    st.step = 1;
    save_training_checkpoint(path, st);
  }
  const std::string good = iotest::read_file(path);
  // Files that do not fit the live run (written before its snapshot: they draw random numbers).
  // Another model shape: the model check names the key.
  {
    struct Wide : nn::Module {
      nn::Linear fc1{6, 9}, fc2{9, 3};
      Wide() {
        register_module("fc1", fc1);
        register_module("fc2", fc2);
      }
    } wide;
    optim::Adam opt(wide.parameters(), {.lr = 0.01});
    TrainingState w{&wide, &opt};
    save_training_checkpoint(dir + "/wide.safetensors", w);
  }
  // The right model but an SGD optimizer state: the model must not be loaded either.
  {
    manual_seed(7);
    Net same;
    optim::SGD sgd(same.parameters(), {.lr = 0.1, .momentum = 0.9});
    for (auto& p : same.parameters()) p.set_grad(ones_like(p));
    sgd.step();
    TrainingState s2{&same, &sgd};
    save_training_checkpoint(dir + "/sgd.safetensors", s2);
  }
  // No scheduler/scaler in the file while the run has them.
  {
    manual_seed(8);
    Net same;
    optim::Adam opt(same.parameters(), {.lr = 0.01});
    TrainingState s3{&same, &opt};
    save_training_checkpoint(dir + "/noscheduler.safetensors", s3);
  }
  manual_seed(6);
  TrainRun live;
  live.step();
  live.step();  // live state differs from the file in every part
  TrainingState st = live.state();
  st.step = 2;
  const Snapshot before(live);
  auto expect_unchanged = [&](const std::string& file, std::initializer_list<std::string> parts) {
    expect_error([&] { load_training_checkpoint(file, st); }, parts);
    EXPECT_TRUE(Snapshot(live) == before) << file;
    EXPECT_EQ(st.step, 2) << file;
  };

  // Truncated anywhere: in the length prefix, the header, the data.
  for (size_t cut : {size_t(4), size_t(100), good.size() / 2, good.size() - 1}) {
    const std::string p = dir + "/trunc" + std::to_string(cut) + ".safetensors";
    iotest::write_file(p, good.substr(0, cut));
    expect_unchanged(p, {p});
  }
  // Corrupted header bytes (JSON no longer parses).
  std::string bad = good;
  bad[12] = '\x01';
  iotest::write_file(dir + "/corrupt.safetensors", bad);
  expect_unchanged(dir + "/corrupt.safetensors", {"corrupt.safetensors"});
  // One flipped bit in the data region (the file's last byte): the stored checksum catches it.
  std::string flipped = good;
  flipped.back() = static_cast<char>(flipped.back() ^ 0x10);
  iotest::write_file(dir + "/flipped.safetensors", flipped);
  expect_unchanged(dir + "/flipped.safetensors", {"flipped.safetensors", "does not match its checksum"});
  // Not a checkpoint at all.
  save_safetensors(dir + "/plain.safetensors", {{"w", ones({2})}});
  expect_unchanged(dir + "/plain.safetensors", {"not a Genesis checkpoint"});

  // Another model shape: the model check names the key.  The right model with an SGD
  // state: the model must not be loaded either.  No scheduler in the file.
  expect_unchanged(dir + "/wide.safetensors", {"wide.safetensors", "[model]", "fc1.weight"});
  expect_unchanged(dir + "/sgd.safetensors", {"sgd.safetensors"});
  expect_unchanged(dir + "/noscheduler.safetensors", {"scheduler", "no scheduler state"});
  // After all that, the good file still loads.
  EXPECT_NO_THROW(load_training_checkpoint(path, st));
  EXPECT_EQ(st.step, 1);
  EXPECT_FALSE(Snapshot(live) == before);
}

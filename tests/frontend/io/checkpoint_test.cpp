// checkpoint_test.cpp - full training checkpoints: round trip of every part,
// RNG restore, key layout, and clear errors on mismatched files.
#include "common.h"

using namespace genesis;
using iotest::expect_error;

namespace {

class CheckpointTest : public iotest::TempDirTest {};

Checkpoint sample() {
  Checkpoint c;
  c.model.tensors = {{"fc1.weight", randn({4, 3})}, {"fc1.bias", zeros({4})}, {"emb", ones({2, 2}).to(DType::bf16)}};
  c.optim.tensors = {{"state.0.exp_avg", full({4, 3}, 0.5)}, {"state.0.step", scalar_tensor(3, {.dtype = DType::i64})}};
  c.optim.meta = {{"param_groups", R"([{"lr":0.001,"betas":[0.9,0.999],"params":[0,1]}])"}};
  c.scheduler.meta = {{"last_epoch", "3"}, {"base_lrs", "[0.001]"}};
  c.scaler.tensors = {{"scale", scalar_tensor(65536.0)}};
  c.scaler.meta = {{"growth_tracker", "7"}};
  c.extra["loader"].meta = {{"batch", "17"}};
  c.generators["loader"] = RngState{Device(), 7, 256};
  c.step = 1234567890123ll;
  c.epoch = 2;
  c.user = {{"run", "fashion-mnist"}, {"json", R"({"a": [1, 2]})"}};
  c.capture_rng();
  return c;
}

}  // namespace

TEST_F(CheckpointTest, RoundTripsEveryPart) {
  manual_seed(1234);
  (void)rand({10});  // advance the CPU offset
  Checkpoint c = sample();
  const std::string path = dir + "/ckpt.safetensors";
  save_checkpoint(path, c);
  Checkpoint d = load_checkpoint(path);
  EXPECT_EQ(d.step, c.step);
  EXPECT_EQ(d.epoch, c.epoch);
  EXPECT_EQ(d.user, c.user);
  for (const std::string s : {"model", "optim", "scheduler", "scaler", "loader"}) {
    const CheckpointSection &a = c.section(s), &b = d.section(s);
    EXPECT_EQ(a.meta, b.meta) << s;
    ASSERT_EQ(a.tensors.size(), b.tensors.size()) << s;
    for (const auto& [k, t] : a.tensors) {
      EXPECT_EQ(b.tensors.at(k).dtype(), t.dtype()) << k;
      EXPECT_EQ(b.tensors.at(k).tolist(), t.tolist()) << k;
    }
  }
  ASSERT_EQ(d.rng.size(), c.rng.size());
  for (size_t i = 0; i < c.rng.size(); ++i) {
    EXPECT_EQ(d.rng[i], c.rng[i]);
    EXPECT_TRUE(d.rng[i].device == c.rng[i].device);
  }
  EXPECT_EQ(d.generators.at("loader"), c.generators.at("loader"));
  // One plain safetensors file with section-prefixed keys.
  SafetensorsFile f = load_safetensors(path);
  EXPECT_TRUE(f.tensors.count("model.fc1.weight"));
  EXPECT_TRUE(f.tensors.count("optim.state.0.exp_avg"));
  EXPECT_TRUE(f.tensors.count("scaler.scale"));
  EXPECT_EQ(f.metadata.at("genesis.checkpoint"), kCheckpointFormat);
  EXPECT_EQ(f.metadata.at("step"), "1234567890123");
}

TEST_F(CheckpointTest, RestoresRng) {
  manual_seed(99);
  (void)randn({7});
  Checkpoint c;
  c.capture_rng();
  save_checkpoint(dir + "/r.safetensors", c);
  const std::vector<double> expect = rand({6}).tolist();
  manual_seed(5);  // something else entirely
  (void)rand({100});
  load_checkpoint(dir + "/r.safetensors").restore_rng();
  EXPECT_EQ(rand({6}).tolist(), expect);
}

TEST_F(CheckpointTest, MismatchedFilesGiveClearErrors) {
  const std::string plain = dir + "/plain.safetensors";
  save_safetensors(plain, {{"w", ones({2})}}, {{"format", "pt"}});
  expect_error([&] { load_checkpoint(plain); }, {"plain.safetensors", "not a Genesis checkpoint"});

  const std::string path = dir + "/c.safetensors";
  save_checkpoint(path, sample());
  SafetensorsFile f = load_safetensors(path);
  // A tensor removed behind the manifest's back.
  SafetensorsFile g = f;
  g.tensors.erase("model.fc1.bias");
  save_safetensors(dir + "/missing.safetensors", g.tensors, g.metadata);
  expect_error([&] { load_checkpoint(dir + "/missing.safetensors"); }, {"section 'model'", "should hold 3"});
  // A tensor of no section.
  g = f;
  g.tensors["stray.x"] = ones({1});
  save_safetensors(dir + "/stray.safetensors", g.tensors, g.metadata);
  expect_error([&] { load_checkpoint(dir + "/stray.safetensors"); }, {"'stray.x'", "no section"});
  // Another format version, a broken manifest.
  g = f;
  g.metadata["genesis.checkpoint"] = "genesis.checkpoint/99";
  save_safetensors(dir + "/v99.safetensors", g.tensors, g.metadata);
  expect_error([&] { load_checkpoint(dir + "/v99.safetensors"); }, {"unsupported checkpoint format"});
  g = f;
  g.metadata["genesis.manifest"] = "{oops";
  save_safetensors(dir + "/badjson.safetensors", g.tensors, g.metadata);
  expect_error([&] { load_checkpoint(dir + "/badjson.safetensors"); }, {"manifest is not valid JSON"});
  // A truncated checkpoint.
  const std::string bytes = iotest::read_file(path);
  iotest::write_file(dir + "/trunc.safetensors", bytes.substr(0, bytes.size() / 2));
  expect_error([&] { load_checkpoint(dir + "/trunc.safetensors"); }, {"trunc.safetensors"});
  // Bad section names.
  Checkpoint bad;
  bad.extra["a.b"].meta = {{"x", "y"}};
  expect_error([&] { save_checkpoint(dir + "/bad.safetensors", bad); }, {"section name 'a.b'"});
  Checkpoint clash;
  clash.extra["model"].meta = {{"x", "y"}};
  expect_error([&] { save_checkpoint(dir + "/clash.safetensors", clash); }, {"clashes"});
}

TEST_F(CheckpointTest, AFlippedDataBitFailsTheLoadNamingTheTensor) {
  const std::string path = dir + "/flip.safetensors";
  save_checkpoint(path, sample());
  std::string bytes = iotest::read_file(path);
  // The file offset of "model.fc1.weight"'s data, read from the header by hand: the length
  // prefix, then the entry's data_offsets (relative to the end of the header).
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(static_cast<unsigned char>(bytes[i])) << (8 * i);
  const std::string header = bytes.substr(8, n);
  const size_t at = header.find("\"model.fc1.weight\"");
  ASSERT_NE(at, std::string::npos);
  const size_t offsets = header.find("\"data_offsets\":[", at) + 16;
  const uint64_t begin = std::stoull(header.substr(offsets));
  const uint64_t end = std::stoull(header.substr(header.find(',', offsets) + 1));
  ASSERT_EQ(end - begin, 4u * 3 * 4);  // (4, 3) float32
  bytes[8 + n + begin + 13] = static_cast<char>(bytes[8 + n + begin + 13] ^ 0x01);
  iotest::write_file(path, bytes);
  expect_error([&] { load_checkpoint(path); },
               {path, "tensor 'model.fc1.weight'",
                "(bytes " + std::to_string(begin) + ".." + std::to_string(end) + " of the data region)",
                "does not match its checksum"});
}

TEST_F(CheckpointTest, AtomicOverwrite) {
  const std::string path = dir + "/a.safetensors";
  save_checkpoint(path, sample());
  const std::string before = iotest::read_file(path);
  Checkpoint bad = sample();
  bad.model.tensors["broken"] = Tensor();
  expect_error([&] { save_checkpoint(path, bad); }, {"model.broken"});
  EXPECT_EQ(iotest::read_file(path), before);
}

TEST_F(CheckpointTest, StateDictMatch) {
  TensorMap a = {{"w", zeros({2, 3})}, {"b", zeros({2})}};
  EXPECT_NO_THROW(check_state_dict_match(a, a, "model"));
  TensorMap b = {{"w", zeros({3, 2})}, {"c", zeros({2})}};
  expect_error([&] { check_state_dict_match(a, b, "model"); },
               {"missing keys: b", "unexpected keys: c", "w (expected [2,3,] float32, got [3,2,] float32)"});
  TensorMap c = {{"w", zeros({2, 3})}};
  EXPECT_NO_THROW(check_state_dict_match(a, c, "model", /*strict=*/false));
}

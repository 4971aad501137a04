// safetensors_test.cpp - HF fixture files as an oracle, round trips of every
// dtype, an independent header reader, corrupt files, atomic writes.
#include <dirent.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "common.h"

using namespace genesis;
using iotest::craft;
using iotest::expect_error;
using json = nlohmann::json;

namespace {

const std::string kFixtures = GENESIS_SOURCE_DIR "/tests/fixtures/qwen";  // files transformers wrote

// A tiny independent reader: header length and parsed JSON header.
struct Raw {
  uint64_t n = 0;
  json header;
  std::string bytes;
};
Raw raw_read(const std::string& path) {
  Raw r;
  r.bytes = iotest::read_file(path);
  for (int i = 0; i < 8; ++i) r.n |= uint64_t(static_cast<unsigned char>(r.bytes[i])) << (8 * i);
  r.header = json::parse(r.bytes.substr(8, r.n));
  return r;
}

size_t count_entries(const std::string& dir) {
  size_t n = 0;
  DIR* d = ::opendir(dir.c_str());
  while (dirent* e = ::readdir(d)) n += std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, "..");
  ::closedir(d);
  return n;
}

class Safetensors : public iotest::TempDirTest {};

}  // namespace

TEST_F(Safetensors, ReadsHfFixtures) {
  for (const std::string m : {"qwen2-tiny", "qwen3-tiny"}) {
    const std::string path = kFixtures + "/" + m + "/model.safetensors";
    ASSERT_EQ(::access(path.c_str(), R_OK), 0) << "fixture missing: " << path;
    SafetensorsFile f = load_safetensors(path);
    Raw raw = raw_read(path);
    EXPECT_EQ(raw.n % 8, 0u);
    EXPECT_EQ(f.metadata.at("format"), "pt");
    ASSERT_EQ(f.tensors.size() + 1, raw.header.size());  // + __metadata__
    uint64_t bytes = 0;
    for (const auto& [name, t] : f.tensors) {
      const json& e = raw.header.at(name);
      EXPECT_EQ(e["dtype"].get<std::string>(), safetensors_dtype(t.dtype())) << name;
      EXPECT_EQ(e["shape"].get<std::vector<int64_t>>(), t.shape()) << name;
      const uint64_t b = t.numel() * gn_dtype_size(static_cast<int32_t>(t.dtype()));
      EXPECT_EQ(e["data_offsets"][1].get<uint64_t>() - e["data_offsets"][0].get<uint64_t>(), b) << name;
      // The tensor's bytes are the file's bytes.
      std::string host(b, '\0');
      check(gn_tensor_to_host(t.handle(), host.data(), b));
      EXPECT_EQ(host, raw.bytes.substr(8 + raw.n + e["data_offsets"][0].get<uint64_t>(), b)) << name;
      bytes += b;
    }
    EXPECT_EQ(8 + raw.n + bytes, raw.bytes.size());
    EXPECT_EQ(f.tensors.at("model.embed_tokens.weight").dtype(), DType::f32);
    EXPECT_EQ(f.tensors.at("model.embed_tokens.weight").size(1), 64);
    EXPECT_EQ(f.tensors.at("model.layers.0.input_layernorm.weight").shape(), Shape{64});
  }
  const std::string ref = kFixtures + "/qwen2-tiny/reference.safetensors";
  SafetensorsFile r = load_safetensors(ref);
  EXPECT_TRUE(r.metadata.empty());
  EXPECT_EQ(r.tensors.at("input_ids").dtype(), DType::i64);
  EXPECT_EQ(r.tensors.at("input_ids").shape(), (Shape{2, 16}));
  EXPECT_EQ(load_safetensors_metadata(kFixtures + "/qwen2-tiny/model.safetensors").at("format"), "pt");
}

TEST_F(Safetensors, RoundTripEveryDtype) {
  const std::vector<double> vals = {0, 1, -2, 3.5, 0.25, -1, 7, 1};
  TensorMap m;
  for (DType d : {DType::f32, DType::f16, DType::bf16, DType::f64, DType::i8, DType::u8, DType::i32, DType::i64,
                  DType::boolean}) {
    std::vector<double> v = vals;
    if (d == DType::u8) v = {0, 1, 2, 3, 255, 9, 7, 1};
    if (!is_floating(d)) v[3] = 3, v[4] = d == DType::u8 ? 255 : 4;
    if (d == DType::boolean) v = {0, 1, 1, 0, 1, 0, 0, 1};
    m[std::string("t_") + dtype_name(d)] = tensor(v, {2, 4}).to(d);
  }
  m["scalar"] = scalar_tensor(42.5);
  m["empty"] = zeros({0, 3});
  m["noncontig"] = tensor(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3}).t();  // (3,2), strided
  ASSERT_FALSE(m["noncontig"].is_contiguous());
  const StringMap meta = {{"format", "pt"}, {"note", "héllo \"quoted\""}};
  const std::string path = dir + "/all.safetensors";
  save_safetensors(path, m, meta);

  SafetensorsFile f = load_safetensors(path);
  EXPECT_EQ(f.metadata, meta);
  ASSERT_EQ(f.tensors.size(), m.size());
  for (const auto& [k, t] : m) {
    const Tensor& u = f.tensors.at(k);
    EXPECT_EQ(u.dtype(), t.dtype()) << k;
    EXPECT_EQ(u.shape(), t.shape()) << k;
    EXPECT_TRUE(u.is_contiguous()) << k;
    EXPECT_EQ(u.tolist(), t.tolist()) << k;
  }
  // Independent reading: header padded to 8, codes, data tiles the file in header order.
  Raw raw = raw_read(path);
  EXPECT_EQ(raw.n % 8, 0u);
  EXPECT_EQ(raw.header["__metadata__"]["note"], "héllo \"quoted\"");
  EXPECT_EQ(raw.header["t_bfloat16"]["dtype"], "BF16");
  EXPECT_EQ(raw.header["t_bool"]["dtype"], "BOOL");
  EXPECT_EQ(raw.header["scalar"]["shape"], json::array());
  uint64_t pos = 0;
  for (auto it = raw.header.begin(); it != raw.header.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    EXPECT_EQ(it.value()["data_offsets"][0].get<uint64_t>(), pos) << it.key();
    pos = it.value()["data_offsets"][1].get<uint64_t>();
  }
  EXPECT_EQ(8 + raw.n + pos, raw.bytes.size());
  // bf16 bit patterns: 3.5 = 0x4060, -2 = 0xC000.
  const uint64_t off = raw.header["t_bfloat16"]["data_offsets"][0].get<uint64_t>();
  const auto* b = reinterpret_cast<const unsigned char*>(raw.bytes.data() + 8 + raw.n + off);
  EXPECT_EQ(b[4] | (b[5] << 8), 0xC000);
  EXPECT_EQ(b[6] | (b[7] << 8), 0x4060);
  // Strided tensor stored row-major: [[1,4],[2,5],[3,6]].
  EXPECT_EQ(f.tensors.at("noncontig").tolist(), (std::vector<double>{1, 4, 2, 5, 3, 6}));
  // In-memory image equals the file.
  EXPECT_EQ(safetensors_serialize(m, meta), raw.bytes);
  // save()/load() convenience.
  save(m, dir + "/sd.safetensors");
  EXPECT_EQ(load(dir + "/sd.safetensors").size(), m.size());
}

TEST_F(Safetensors, PythonReadsOurFile) {
  // Python's json + numpy as a second independent reader (safetensors itself when installed).
  if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no python3";
  const std::string path = dir + "/py.safetensors";
  save_safetensors(
      path, {{"a", tensor(std::vector<double>{1.5, -2, 3}, {3}).to(DType::bf16)}, {"b", arange(6).reshape({2, 3})}},
      {{"k", "v"}});
  const std::string script = dir + "/check.py";
  iotest::write_file(script, R"PY(
import json, struct, sys, zlib
p = sys.argv[1]
try:
    from safetensors.numpy import load_file
    import numpy as np
    t = load_file(p)
    assert t["b"].tolist() == [[0, 1, 2], [3, 4, 5]]
    print("safetensors OK")
    sys.exit(0)
except ImportError:
    pass
b = open(p, "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
crcs = h["__metadata__"].pop("genesis.crc32").split(" ")
assert n % 8 == 0 and h["__metadata__"] == {"k": "v"}, h
d = b[8 + n:]
# One zlib CRC-32 per tensor, in data order.
spans = sorted(e["data_offsets"] for k, e in h.items() if k != "__metadata__")
assert crcs == ["%08x" % zlib.crc32(d[s:e]) for s, e in spans], crcs
a = h["a"]; s, e = a["data_offsets"]
bits = struct.unpack("<3H", d[s:e])
vals = [struct.unpack("<f", struct.pack("<I", x << 16))[0] for x in bits]
assert a["dtype"] == "BF16" and vals == [1.5, -2.0, 3.0], vals
bb = h["b"]; s, e = bb["data_offsets"]
assert bb["dtype"] == "I64" and bb["shape"] == [2, 3]
assert list(struct.unpack("<6q", d[s:e])) == [0, 1, 2, 3, 4, 5]
assert e == len(d)
print("json OK")
)PY");
  EXPECT_EQ(std::system(("/usr/bin/python3 " + script + " " + path).c_str()), 0);
}

TEST_F(Safetensors, CorruptFilesGiveClearErrors) {
  const std::string good_path = dir + "/good.safetensors";
  save_safetensors(good_path, {{"w", ones({2, 2})}, {"b", zeros({2})}});
  const std::string good = iotest::read_file(good_path);
  int k = 0;
  auto expect_bad = [&](const std::string& bytes, std::initializer_list<std::string> parts) {
    const std::string p = dir + "/bad" + std::to_string(k++) + ".safetensors";
    iotest::write_file(p, bytes);
    std::vector<std::string> all(parts);
    all.push_back(p);
    for (const std::string& s : all) expect_error([&] { load_safetensors(p); }, {s});
  };
  expect_bad("", {"truncated"});
  expect_bad(good.substr(0, 5), {"truncated"});
  expect_bad(good.substr(0, good.size() - 3), {"beyond the data"});
  expect_bad(good.substr(0, 40), {"exceeds the file size"});
  std::string huge = good;
  huge[7] = 0x7f;
  expect_bad(huge, {"100 MB limit"});
  expect_bad(craft("{\"w\": {\"dtype\": \"F32\", ", std::string(16, '\0')), {"bad JSON header"});
  expect_bad(craft("[1, 2]", ""), {"not a JSON object"});
  expect_bad(craft(R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})", std::string(8, '\0')),
             {"tensor 'w'", "beyond the data"});
  expect_bad(craft(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                   R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                   std::string(12, '\0')),
             {"overlap", "'a'", "'b'"});
  expect_bad(craft(R"({"w":{"dtype":"F8_E4M3","shape":[4],"data_offsets":[0,4]}})", std::string(4, '\0')),
             {"unknown or unsupported dtype 'F8_E4M3'"});
  expect_bad(craft(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", std::string(8, '\0')),
             {"tensor 'w'", "needs 12 bytes", "span 8"});
  expect_bad(craft(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", std::string(4, '\0')),
             {"non-negative"});
  expect_bad(craft(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})", std::string(4, '\0')),
             {"end before they begin"});
  expect_bad(craft(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", std::string(8, '\0')),
             {"belong to no tensor"});
  expect_bad(craft(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", std::string(8, '\0')),
             {"after the last tensor"});
  expect_bad(craft(R"({"__metadata__":{"a":1}})", ""), {"'__metadata__'", "not a string"});
  expect_bad(craft(R"({"w":{"shape":[1],"data_offsets":[0,4]}})", std::string(4, '\0')), {"'dtype'"});
  expect_error([&] { load_safetensors(dir + "/nope.safetensors"); }, {"nope.safetensors", "cannot open"});
  expect_error([&] { load_safetensors(dir); }, {"directory"});
}

TEST_F(Safetensors, WritesAreAtomic) {
  const std::string path = dir + "/m.safetensors";
  save_safetensors(path, {{"w", ones({3})}});
  const std::string before = iotest::read_file(path);
  // A failing save (undefined tensor) leaves the old file and no temp file.
  expect_error([&] { save_safetensors(path, {{"w", ones({3})}, {"bad", Tensor()}}); }, {"'bad'", "undefined"});
  EXPECT_EQ(iotest::read_file(path), before);
  EXPECT_EQ(count_entries(dir), 1u);
  // Overwrite succeeds and replaces the whole file.
  save_safetensors(path, {{"w", zeros({5})}});
  EXPECT_EQ(load_safetensors(path).tensors.at("w").numel(), 5);
  EXPECT_EQ(count_entries(dir), 1u);
  // Unwritable destination: clear error naming it.
  expect_error(
      [&] {
        save_safetensors(dir + "/no/such/dir/x.safetensors", {{"w", ones({1})}});
      },
      {"x.safetensors", "temporary file"});
  expect_error([&] { save_safetensors(path, {{"__metadata__", ones({1})}}); }, {"__metadata__"});
}

TEST_F(Safetensors, PythonReadsEveryDtype) {
  // An independent reader in plain Python (struct + json, the byte layout of the
  // safetensors spec) decodes every dtype we write and compares with the values.
  if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no python3";
  const std::vector<double> vals = {0, 1, -2, 3.5, 0.25, -1, 7, 1};
  TensorMap m;
  json want = json::object();
  for (DType d : {DType::f32, DType::f16, DType::bf16, DType::f64, DType::i8, DType::u8, DType::i32, DType::i64,
                  DType::boolean}) {
    std::vector<double> v = vals;
    if (!is_floating(d)) v = {0, 1, -2, 3, 4, -1, 7, 1};
    if (d == DType::u8) v = {0, 1, 2, 3, 255, 9, 7, 1};
    if (d == DType::boolean) v = {0, 1, 1, 0, 1, 0, 0, 1};
    const std::string k = std::string("t_") + dtype_name(d);
    m[k] = tensor(v, {2, 4}).to(d);
    want[k] = {{"dtype", safetensors_dtype(d)}, {"values", v}};
  }
  const std::string path = dir + "/every.safetensors";
  save_safetensors(path, m, {{"format", "pt"}, {"k", "v"}});
  iotest::write_file(dir + "/want.json", want.dump());
  const std::string script = dir + "/every.py";
  iotest::write_file(script, R"PY(
import json, struct, sys, zlib
b = open(sys.argv[1], "rb").read()
want = json.load(open(sys.argv[2]))
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
data = b[8 + n:]
meta = h.pop("__metadata__")
crcs = meta.pop("genesis.crc32").split(" ")
assert n % 8 == 0 and meta == {"format": "pt", "k": "v"}
spans = sorted(e["data_offsets"] for e in h.values())
assert crcs == ["%08x" % zlib.crc32(data[s:t]) for s, t in spans], crcs
fmt = {"F32": "f", "F16": "e", "F64": "d", "I8": "b", "U8": "B", "I32": "i", "I64": "q", "BOOL": "?"}
ends = []
for k, e in h.items():
    s, t = e["data_offsets"]
    ends.append((s, t))
    assert e["shape"] == [2, 4] and e["dtype"] == want[k]["dtype"], (k, e)
    raw = data[s:t]
    if e["dtype"] == "BF16":  # the high half of a float32
        vals = [struct.unpack("<f", struct.pack("<I", x << 16))[0] for x in struct.unpack("<8H", raw)]
    else:
        vals = list(struct.unpack("<8" + fmt[e["dtype"]], raw))
    assert [float(v) for v in vals] == want[k]["values"], (k, vals)
ends.sort()
assert ends[0][0] == 0 and all(a[1] == b[0] for a, b in zip(ends, ends[1:])) and ends[-1][1] == len(data)
print("python: every dtype OK")
)PY");
  EXPECT_EQ(std::system(("/usr/bin/python3 " + script + " " + path + " " + dir + "/want.json").c_str()), 0);
}

TEST_F(Safetensors, HfFixtureValuesAgreeWithPython) {
  // A tensor of the HF fixture read by us and, independently, by plain Python:
  // the sum and the first elements agree (bf16/f32 decoded by hand in Python).
  const std::string path = kFixtures + "/qwen2-tiny/model.safetensors";
  if (::access(path.c_str(), R_OK) != 0) GTEST_SKIP() << "fixture missing: " << path;
  if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no python3";
  const std::string name = "model.layers.0.self_attn.q_proj.weight";
  Tensor t = load_safetensors(path).tensors.at(name);
  const std::string script = dir + "/fixture.py";
  iotest::write_file(script, R"PY(
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
e = json.loads(b[8:8 + n])[sys.argv[2]]
s, t = e["data_offsets"]
raw = b[8 + n + s:8 + n + t]
if e["dtype"] == "BF16":
    v = [struct.unpack("<f", struct.pack("<I", x << 16))[0] for x in struct.unpack("<%dH" % (len(raw) // 2), raw)]
elif e["dtype"] == "F32":
    v = list(struct.unpack("<%df" % (len(raw) // 4), raw))
else:
    raise SystemExit("unexpected dtype " + e["dtype"])
print(json.dumps({"shape": e["shape"], "sum": sum(v), "head": v[:5]}))
)PY");
  const std::string out = dir + "/fixture.json";
  ASSERT_EQ(std::system(("/usr/bin/python3 " + script + " " + path + " " + name + " > " + out).c_str()), 0);
  const json py = json::parse(iotest::read_file(out));
  EXPECT_EQ(py["shape"].get<std::vector<int64_t>>(), t.shape());
  const std::vector<double> v = t.tolist();
  double sum = 0;
  for (double x : v) sum += x;
  EXPECT_NEAR(py["sum"].get<double>(), sum, 1e-9 * (1 + std::fabs(sum)));
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(py["head"][i].get<double>(), v[i]) << i;
}

// ---------------------------------------------------------------- checksums

TEST_F(Safetensors, AFlippedDataBitFailsTheLoadNamingFileAndTensor) {
  const TensorMap sd = {{"a.weight", tensor(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3})},
                        {"b.bias", arange(7)},
                        {"c", tensor(std::vector<double>{0.5, -1, 2, 8}, {4}).to(DType::bf16)}};
  const std::string path = dir + "/flip.safetensors";
  for (const auto& [name, t] : sd) {
    save(sd, path);
    ASSERT_EQ(load(path).size(), 3u);  // intact, it loads
    const Raw r = raw_read(path);
    const uint64_t begin = r.header[name]["data_offsets"][0], end = r.header[name]["data_offsets"][1];
    std::string bytes = r.bytes;
    const size_t pos = 8 + r.n + (begin + end) / 2;
    bytes[pos] = static_cast<char>(bytes[pos] ^ 0x20);
    iotest::write_file(path, bytes);
    const std::string region = "(bytes " + std::to_string(begin) + ".." + std::to_string(end) + " of the data region)";
    expect_error([&] { load(path); }, {path, "tensor '" + name + "'", region, "does not match its checksum"});
    expect_error([&] { safetensors_deserialize(bytes, Device(), "image"); },
                 {"image", "tensor '" + name + "'", region});
  }
}

TEST_F(Safetensors, ChecksumsStayOutOfTheMetadata) {
  const std::string path = dir + "/meta.safetensors";
  // A caller's entry of the checksum's name is replaced by the real one.
  save_safetensors(path, {{"w", ones({3})}}, {{"k", "v"}, {"genesis.crc32", "not a checksum"}});
  const StringMap want = {{"k", "v"}};
  EXPECT_EQ(load_safetensors(path).metadata, want);
  EXPECT_EQ(load_safetensors_metadata(path), want);
  // Stored: one CRC-32 of the 12 bytes of three float32 ones (zlib's crc32, worked out with Python).
  EXPECT_EQ(raw_read(path).header["__metadata__"]["genesis.crc32"], "dc7c4e94");
  EXPECT_EQ(safetensors_deserialize(safetensors_serialize({{"w", ones({3})}}, {{"k", "v"}})).metadata, want);
}

TEST_F(Safetensors, FilesWithoutChecksumsStillLoad) {
  // As Hugging Face writes them: no "genesis.crc32"; a changed byte goes unnoticed, as before.
  std::string data(8, '\0');
  const float v[2] = {1.5f, -2.0f};
  std::memcpy(data.data(), v, 8);
  const std::string path = dir + "/hf.safetensors";
  iotest::write_file(
      path, craft(R"({"__metadata__":{"format":"pt"},"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", data));
  SafetensorsFile f = load_safetensors(path);
  EXPECT_EQ(f.tensors.at("x").tolist(), (std::vector<double>{1.5, -2.0}));
  EXPECT_EQ(f.metadata, (StringMap{{"format", "pt"}}));
}

TEST_F(Safetensors, AMalformedChecksumEntryIsRefused) {
  const std::string data(4, '\0');
  for (const std::string crc : {"", "0000000", "00000000 00000000", "0000000g", "0000000A"}) {
    const std::string path = dir + "/badcrc.safetensors";
    iotest::write_file(path, craft(R"({"__metadata__":{"genesis.crc32":")" + crc +
                                       R"("},"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                                   data));
    expect_error([&] { load_safetensors(path); }, {path, "'genesis.crc32' metadata", "corrupt file"});
  }
}

// creation_test.cpp - arange, full and the Philox random ops: the known-answer
// vector, reproducibility, counter layout and distribution statistics.
#include <cmath>
#include <cstdint>
#include <vector>

#include "harness.h"

using namespace reftest;

namespace {

const int64_t kN = 100000;

// Raw Philox words 0..n-1 for (seed, offset), read through randint(0, 2^32).
std::vector<int64_t> raw_words(int64_t n, uint64_t seed, uint64_t offset) {
  HostTensor w = HostTensor::zeros({n}, GN_I64);
  Status st =
      run("randint", GN_I64, {}, {w}, {ai(0), ai(int64_t(1) << 32), aints({n}), ai(GN_I64), adevice()}, seed, offset);
  EXPECT_TRUE(st == nullptr) << (st ? st->msg : "");
  return w.ints();
}

HostTensor rand_of(int64_t n, int32_t dtype, uint64_t seed, uint64_t offset, const char* op = "rand") {
  HostTensor y = HostTensor::zeros({n}, dtype);
  Status st = run(op, dtype, {}, {y}, {aints({n}), ai(dtype), adevice()}, seed, offset);
  EXPECT_TRUE(st == nullptr) << (st ? st->msg : "");
  return y;
}

void mean_var(const std::vector<double>& v, double& mean, double& var) {
  mean = 0.0;
  for (double x : v) mean += x;
  mean /= (double)v.size();
  var = 0.0;
  for (double x : v) var += (x - mean) * (x - mean);
  var /= (double)(v.size() - 1);
}

}  // namespace

// ----------------------------------------------------------------------------
// arange and full

TEST(ReferenceCreation, Arange) {
  HostTensor y = HostTensor::zeros({10}, GN_F64);
  ASSERT_OK(run("arange", GN_F64, {}, {y}, {af(0), af(1), af(0.1), ai(GN_F64), adevice()}));
  std::vector<double> want;
  for (int i = 0; i < 10; ++i) want.push_back(i * 0.1);
  expect_values(y, want, 1e-15);
  HostTensor d = HostTensor::zeros({3}, GN_I32);
  ASSERT_OK(run("arange", GN_I32, {}, {d}, {af(5), af(0), af(-2), ai(GN_I32), adevice()}));
  expect_ints(d, {5, 3, 1});
  // Integral start/step into int64: exact past 2^53.
  const double start = std::ldexp(1.0, 53);
  HostTensor big = HostTensor::zeros({3}, GN_I64);
  ASSERT_OK(run("arange", GN_I64, {}, {big}, {af(start), af(start + 8), af(1), ai(GN_I64), adevice()}));
  const int64_t s = int64_t(1) << 53;
  expect_ints(big, {s, s + 1, s + 2});
  HostTensor e = HostTensor::zeros({0}, GN_F32);
  EXPECT_OK(run("arange", GN_F32, {}, {e}, {af(1), af(1), af(1), ai(GN_F32), adevice()}));
  EXPECT_CODE(run("arange", GN_F32, {}, {e}, {af(0), af(1), af(0), ai(GN_F32), adevice()}), GN_ERR_INVALID_ARGUMENT);
}

TEST(ReferenceCreation, Full) {
  HostTensor y = HostTensor::zeros({2, 3}, GN_F32);
  ASSERT_OK(run("full", GN_F32, {}, {y}, {aints({2, 3}), af(-1.25), ai(GN_F32), adevice()}));
  expect_values(y, std::vector<double>(6, -1.25));
  HostTensor b = HostTensor::zeros({2}, GN_BOOL);
  ASSERT_OK(run("full", GN_BOOL, {}, {b}, {aints({2}), af(3), ai(GN_BOOL), adevice()}));
  expect_ints(b, {1, 1});
  HostTensor s = HostTensor::zeros({}, GN_BF16);
  ASSERT_OK(run("full", GN_BF16, {}, {s}, {aints({}), af(1.0 / 3.0), ai(GN_BF16), adevice()}));
  EXPECT_EQ(s.bits16(0), 0x3EAB);
}

// ----------------------------------------------------------------------------
// Philox: the definition (gn/sdk/philox.h)

TEST(ReferenceRandom, PhiloxKnownAnswer) {
  // Philox4x32-10, counter 0, key 0 (Random123 / cuRAND known-answer vector).
  const uint32_t kat[4] = {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u};
  std::vector<int64_t> w = raw_words(4, 0, 0);
  for (int i = 0; i < 4; ++i) EXPECT_EQ((uint32_t)w[(size_t)i], kat[i]) << "word " << i;
  // rand's output bits are the top 24 bits of each word.
  HostTensor u = rand_of(4, GN_F32, 0, 0);
  for (int i = 0; i < 4; ++i) EXPECT_EQ((uint32_t)std::ldexp(u.at(i), 24), kat[i] >> 8) << "rand element " << i;
  HostTensor u64 = rand_of(4, GN_F64, 0, 0);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(u64.at(i), std::ldexp((double)(kat[i] >> 8), -24));
}

TEST(ReferenceRandom, CounterLayout) {
  // Element i uses counter offset + i/4: offset 1 starts where element 4 was.
  std::vector<double> a = rand_of(12, GN_F64, 7, 0).values();
  std::vector<double> b = rand_of(8, GN_F64, 7, 1).values();
  for (int i = 0; i < 8; ++i) EXPECT_EQ(b[(size_t)i], a[(size_t)i + 4]);
  // The seed is the key: both 32-bit halves matter.
  std::vector<double> c = rand_of(8, GN_F64, 7 + (uint64_t(1) << 32), 0).values();
  int same = 0;
  for (int i = 0; i < 8; ++i) same += c[(size_t)i] == a[(size_t)i];
  EXPECT_LT(same, 2);
}

TEST(ReferenceRandom, Reproducible) {
  for (const char* op : {"rand", "randn"}) {
    std::vector<double> a = rand_of(1000, GN_F32, 1234, 56, op).values();
    std::vector<double> b = rand_of(1000, GN_F32, 1234, 56, op).values();
    std::vector<double> c = rand_of(1000, GN_F32, 1234, 57 + 1000, op).values();
    std::vector<double> d = rand_of(1000, GN_F32, 1235, 56, op).values();
    EXPECT_EQ(a, b) << op;
    int same_c = 0, same_d = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      same_c += a[i] == c[i];
      same_d += a[i] == d[i];
    }
    EXPECT_LT(same_c, 5) << op << ": another offset gives other numbers";
    EXPECT_LT(same_d, 5) << op << ": another seed gives other numbers";
  }
}

TEST(ReferenceRandom, RandnIsBoxMullerOfTheWords) {
  // randn element i: block offset + i/2, words 2*(i%2) and 2*(i%2)+1.
  const int64_t n = 64;
  std::vector<int64_t> w = raw_words(2 * n, 99, 3);  // blocks 3.. cover n normals
  HostTensor z = rand_of(n, GN_F64, 99, 3, "randn");
  for (int64_t i = 0; i < n; ++i) {
    size_t a = (size_t)(4 * (i / 2) + 2 * (i % 2));
    double u1 = ((double)((uint32_t)w[a] >> 8) + 1.0) / 16777216.0;
    double u2 = (double)((uint32_t)w[a + 1] >> 8) / 16777216.0;
    double want = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
    EXPECT_NEAR(z.at(i), want, 1e-12) << "element " << i;
  }
}

// ----------------------------------------------------------------------------
// distributions (100k samples, 4 sigma)

TEST(ReferenceRandom, RandIsUniform) {
  std::vector<double> v = rand_of(kN, GN_F64, 42, 0).values();
  double mean, var;
  mean_var(v, mean, var);
  for (double x : v) ASSERT_TRUE(x >= 0.0 && x < 1.0) << x;
  EXPECT_NEAR(mean, 0.5, 4 * std::sqrt(1.0 / 12.0 / kN));
  EXPECT_NEAR(var, 1.0 / 12.0, 4 * std::sqrt((1.0 / 80.0 - 1.0 / 144.0) / kN));
  for (int32_t dt : {GN_F32, GN_F16, GN_BF16}) {
    std::vector<double> r = rand_of(1000, dt, 42, 0).values();
    for (double x : r) ASSERT_TRUE(x >= 0.0 && x < 1.0) << gn_dtype_name(dt) << " " << x;
  }
}

TEST(ReferenceRandom, RandnIsStandardNormal) {
  std::vector<double> v = rand_of(kN, GN_F64, 43, 0, "randn").values();
  double mean, var;
  mean_var(v, mean, var);
  EXPECT_NEAR(mean, 0.0, 4 / std::sqrt((double)kN));
  EXPECT_NEAR(var, 1.0, 4 * std::sqrt(2.0 / kN));
  int beyond2 = 0;  // P(|z| > 2) = 0.0455
  for (double x : v) beyond2 += std::fabs(x) > 2.0;
  EXPECT_NEAR(beyond2 / (double)kN, 0.0455, 4 * std::sqrt(0.0455 * 0.9545 / kN));
}

TEST(ReferenceRandom, RandintRangeAndUniformity) {
  HostTensor y = HostTensor::zeros({kN}, GN_I64);
  ASSERT_OK(run("randint", GN_I64, {}, {y}, {ai(-3), ai(7), aints({kN}), ai(GN_I64), adevice()}, 5, 0));
  std::vector<int64_t> counts(10, 0);
  for (int64_t v : y.ints()) {
    ASSERT_TRUE(v >= -3 && v < 7) << v;
    ++counts[(size_t)(v + 3)];
  }
  const double sd = std::sqrt(kN * 0.1 * 0.9);
  for (int64_t c : counts) EXPECT_NEAR((double)c, kN * 0.1, 4 * sd);
  HostTensor small = HostTensor::zeros({100}, GN_U8);
  ASSERT_OK(run("randint", GN_U8, {}, {small}, {ai(250), ai(256), aints({100}), ai(GN_U8), adevice()}, 5, 0));
  for (int64_t v : small.ints()) EXPECT_TRUE(v >= 250 && v <= 255) << v;
  EXPECT_CODE(run("randint", GN_I64, {}, {y}, {ai(3), ai(3), aints({kN}), ai(GN_I64), adevice()}),
              GN_ERR_INVALID_ARGUMENT);
  EXPECT_CODE(run("randint", GN_I64, {}, {y}, {ai(0), ai((int64_t(1) << 32) + 1), aints({kN}), ai(GN_I64), adevice()}),
              GN_ERR_INVALID_ARGUMENT);
}

TEST(ReferenceRandom, Bernoulli) {
  HostTensor p = HostTensor::of({0.3}, {1}, GN_F64).expanded({kN});
  HostTensor y = HostTensor::zeros({kN}, GN_F64);
  ASSERT_OK(run("bernoulli", GN_F64, {p}, {y}, {}, 11, 2));
  double rate = 0.0;
  for (double v : y.values()) {
    ASSERT_TRUE(v == 0.0 || v == 1.0);
    rate += v;
  }
  rate /= kN;
  EXPECT_NEAR(rate, 0.3, 4 * std::sqrt(0.3 * 0.7 / kN));
  // Element i is u(i) < p(i) with rand's u for the same seed and offset.
  HostTensor probs = HostTensor::of({0, 1, 0.5, 0.5, 0.25, 0.75, 0.9, 0.1}, {2, 4}, GN_F32);
  HostTensor b = HostTensor::zeros({2, 4}, GN_F32);
  ASSERT_OK(run("bernoulli", GN_F32, {probs}, {b}, {}, 77, 9));
  std::vector<double> u = rand_of(8, GN_F64, 77, 9).values();
  std::vector<double> pv = probs.values(), bv = b.values();
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(bv[i], u[i] < pv[i] ? 1.0 : 0.0) << i;
  EXPECT_EQ(bv[0], 0.0);
  EXPECT_EQ(bv[1], 1.0);
  HostTensor bad = HostTensor::of({0.5, 1.5}, {2}, GN_F32), yb = HostTensor::zeros({2}, GN_F32);
  EXPECT_CODE(run("bernoulli", GN_F32, {bad}, {yb}), GN_ERR_INVALID_ARGUMENT);
}

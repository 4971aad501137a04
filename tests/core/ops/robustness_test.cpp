// Every built-in infer function, fed random (mostly invalid) inputs and
// attributes, returns either OK with well-formed outputs or a status with a
// known code and a "[op] " message: no crash, no exception, no garbage.
// Run under ASan/UBSan this also checks for out-of-bounds reads.
#include <cmath>
#include <cstdint>
#include <random>

#include "infer_test_util.h"

namespace genesis::test {
namespace {

// A random meta: rank 0..4, sizes 0..4 (mostly 1..4), any dtype; sometimes a wrapped scalar.
gn_tensor_meta random_meta(std::mt19937& rng) {
  std::uniform_int_distribution<int> rank(0, 4), size(0, 9), dtype(0, GN_DTYPE_COUNT - 1), coin(0, 9);
  gn_tensor_meta m{};
  m.dtype = dtype(rng);
  m.ndim = rank(rng);
  for (int i = 0; i < m.ndim; ++i) {
    const int s = size(rng);
    m.shape[i] = s == 0 ? 0 : 1 + s % 4;
  }
  if (m.ndim == 0 && coin(rng) == 0) m.flags = GN_META_WRAPPED_SCALAR;
  return m;
}

// A random value of the attribute's kind (defaults used half of the time).
gn_attr_value random_attr(std::mt19937& rng, const gn_attr_spec& spec, std::vector<int64_t>& store) {
  std::uniform_int_distribution<int> coin(0, 1), small(-3, 4), len(0, 3), pick(0, 5);
  // Extremes probe overflow in size arithmetic (UBSan would flag it).
  const int64_t extremes[] = {GN_DIM_NONE, INT64_MAX, int64_t{1} << 40, -(int64_t{1} << 40), 1000, 0};
  const double fextremes[] = {INFINITY, -INFINITY, NAN, 1e300, -1e300, 4.6e18};
  const bool extreme = pick(rng) == 0;
  if (spec.has_default && coin(rng)) return spec.default_value;
  gn_attr_value v{};
  v.kind = spec.kind;
  switch (spec.kind) {
    case GN_ATTR_INT: v.u.i = extreme ? extremes[pick(rng)] : small(rng); break;
    case GN_ATTR_FLOAT: v.u.f = extreme ? fextremes[pick(rng)] : small(rng) * 0.5; break;
    case GN_ATTR_INTS: {
      store.clear();
      for (int n = len(rng); n > 0; --n) store.push_back(extreme ? extremes[pick(rng)] : small(rng));
      v.u.ints.data = store.data();
      v.u.ints.size = store.size();
      break;
    }
    case GN_ATTR_DEVICE: v.u.device = gn_device{-1, 0}; break;
    default: v.u.s = ""; break;
  }
  return v;
}

TEST(Robustness, RandomInputsNeverCrash) {
  std::mt19937 rng(1234);
  size_t n_ok = 0, n_err = 0;
  for (const gn_op_schema& s : core::builtin_schemas()) {
    SCOPED_TRACE(s.name);
    const int hi = s.max_inputs < 0 ? s.min_inputs + 3 : s.max_inputs;
    for (int iter = 0; iter < 400; ++iter) {
      std::uniform_int_distribution<int> count(s.min_inputs, hi);
      std::vector<gn_tensor_meta> in(static_cast<size_t>(count(rng)));
      for (auto& m : in) m = random_meta(rng);
      // Half of the time, make all inputs alike so that valid calls happen too.
      if (iter % 2 == 0)
        for (auto& m : in) m = in.empty() ? m : in[0];
      std::vector<std::vector<int64_t>> stores(s.n_attrs);
      std::vector<gn_attr_value> attrs(s.n_attrs);
      for (size_t i = 0; i < s.n_attrs; ++i) attrs[i] = random_attr(rng, s.attrs[i], stores[i]);
      const size_t cap = s.max_outputs >= 0 ? static_cast<size_t>(s.max_outputs) : 8;
      const Result r = call_infer(s.infer, s.name, in, attrs, cap);
      if (r.ok()) {
        ++n_ok;
        ASSERT_LE(r.out.size(), cap);
        for (const gn_tensor_meta& m : r.out) {
          ASSERT_GE(m.dtype, 0);
          ASSERT_LT(m.dtype, GN_DTYPE_COUNT);
          ASSERT_GE(m.ndim, 0);
          ASSERT_LE(m.ndim, GN_MAX_DIMS);
          for (int d = 0; d < m.ndim; ++d) ASSERT_GE(m.shape[d], 0);
          ASSERT_EQ(m.flags, 0u);
        }
        for (int32_t dt : r.in_dtypes) {
          ASSERT_GE(dt, 0);
          ASSERT_LT(dt, GN_DTYPE_COUNT);
        }
        ASSERT_GE(r.kernel_dtype, 0);
        ASSERT_LT(r.kernel_dtype, GN_DTYPE_COUNT);
      } else {
        ++n_err;
        ASSERT_TRUE(r.code == GN_ERR_SHAPE || r.code == GN_ERR_DTYPE || r.code == GN_ERR_INVALID_ARGUMENT ||
                    r.code == GN_ERR_INDEX)
            << r.code << ": " << r.msg;
        ASSERT_EQ(r.msg.rfind(std::string("[").append(s.name).append("] "), 0), 0u) << r.msg;
        ASSERT_EQ(r.msg.find("internal"), std::string::npos) << r.msg;
      }
    }
  }
  // Both paths were exercised.
  EXPECT_GT(n_ok, 1000u);
  EXPECT_GT(n_err, 1000u);
}

}  // namespace
}  // namespace genesis::test

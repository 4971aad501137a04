// Inference of the creation ops (arange, full, rand, randn, randint), the
// in-place ops (fill, sgd_step, adamw_step, multi_scale_, multi_unscale_check_)
// and multi_sum_sq.
#include <cmath>

#include "infer_test_util.h"

namespace genesis::test {
namespace {

Result arange(double start, double end, double step = 1, int64_t dtype = GN_DIM_NONE) {
  return run("arange", {}, {af("start", start), af("end", end), af("step", step), ai("dtype", dtype)});
}

TEST(Arange, LengthAndDefaultDtype) {
  Result r = arange(0, 10, 3);
  EXPECT_TRUE(has_out(r, 0, GN_I64, {4}));  // 0 3 6 9
  EXPECT_EQ(r.kernel_dtype, GN_I64);
  EXPECT_TRUE(has_out(arange(0, 1, 0.25), 0, GN_F32, {4}));
  EXPECT_TRUE(has_out(arange(0.5, 3), 0, GN_F32, {3}));
  EXPECT_TRUE(has_out(arange(5, 0, -2), 0, GN_I64, {3}));  // 5 3 1
  EXPECT_TRUE(has_out(arange(2, 2), 0, GN_I64, {0}));
  EXPECT_TRUE(has_out(arange(0, 3, 1, GN_F64), 0, GN_F64, {3}));
  EXPECT_EQ(arange(0, 3, 1, GN_F64).kernel_dtype, GN_F64);
}

TEST(Arange, IntegerDtypesTruncateLikeTorch) {
  // torch.arange(0, 2.5, dtype=int64) -> [0, 1]; int32 counts in double -> [0, 1, 2].
  EXPECT_TRUE(has_out(arange(0, 2.5, 1, GN_I64), 0, GN_I64, {2}));
  EXPECT_TRUE(has_out(arange(0, 2.5, 1, GN_I32), 0, GN_I32, {3}));
  // torch.arange(0, -0.5, dtype=int64) -> []: the sign check sees truncated values.
  EXPECT_TRUE(has_out(arange(0, -0.5, 1, GN_I64), 0, GN_I64, {0}));
  EXPECT_TRUE(fails(arange(0, 2.5, 0.5, GN_I32), GN_ERR_INVALID_ARGUMENT, "arange", {"step must be nonzero"}));
}

TEST(Arange, Errors) {
  EXPECT_TRUE(fails(arange(0, 5, 0), GN_ERR_INVALID_ARGUMENT, "arange", {"step must be nonzero"}));
  EXPECT_TRUE(fails(arange(0, -0.5), GN_ERR_INVALID_ARGUMENT, "arange", {"end -0.5", "start 0", "step 1"}));
  EXPECT_TRUE(fails(arange(5, 0, 1), GN_ERR_INVALID_ARGUMENT, "arange", {"end 0"}));
  EXPECT_TRUE(fails(arange(0, NAN), GN_ERR_INVALID_ARGUMENT, "arange", {"finite", "nan"}));
  EXPECT_TRUE(fails(arange(0, 3, 1, GN_BOOL), GN_ERR_DTYPE, "arange", {"bool"}));
  EXPECT_TRUE(fails(arange(0, 3, 1, 17), GN_ERR_INVALID_ARGUMENT, "arange", {"17"}));
}

TEST(Creation, Full) {
  Result r = run("full", {}, {al("shape", {2, 0, 3}), af("value", 1.5), ai("dtype", GN_I32)});
  EXPECT_TRUE(has_out(r, 0, GN_I32, {2, 0, 3}));
  EXPECT_EQ(r.kernel_dtype, GN_I32);
  EXPECT_TRUE(has_out(run("full", {}, {al("shape", {}), af("value", 0)}), 0, GN_F32, {}));
  EXPECT_TRUE(has_out(run("full", {}, {al("shape", {1}), af("value", 1), ai("dtype", GN_BOOL)}), 0, GN_BOOL, {1}));
  EXPECT_TRUE(fails(run("full", {}, {al("shape", {2, -1}), af("value", 0)}), GN_ERR_INVALID_ARGUMENT, "full",
                    {"[2, -1]", "negative"}));
  EXPECT_TRUE(fails(run("full", {}, {al("shape", {1, 1, 1, 1, 1, 1, 1, 1, 1}), af("value", 0)}), GN_ERR_SHAPE, "full",
                    {"9 dims"}));
  EXPECT_TRUE(fails(run("full", {}, {al("shape", {int64_t{1} << 40, int64_t{1} << 40}), af("value", 0)}),
                    GN_ERR_INVALID_ARGUMENT, "full", {"more elements"}));
  EXPECT_TRUE(has_out(run("full", {}, {al("shape", {int64_t{1} << 40, int64_t{1} << 40, 0}), af("value", 0)}), 0,
                      GN_F32, {int64_t{1} << 40, int64_t{1} << 40, 0}));
}

TEST(Creation, RandNeedsFloat) {
  EXPECT_TRUE(has_out(run("rand", {}, {al("shape", {4, 4})}), 0, GN_F32, {4, 4}));
  EXPECT_TRUE(has_out(run("randn", {}, {al("shape", {3}), ai("dtype", GN_BF16)}), 0, GN_BF16, {3}));
  EXPECT_TRUE(fails(run("rand", {}, {al("shape", {3}), ai("dtype", GN_I64)}), GN_ERR_DTYPE, "rand", {"int64"}));
  EXPECT_TRUE(fails(run("randn", {}, {al("shape", {3}), ai("dtype", GN_BOOL)}), GN_ERR_DTYPE, "randn", {"bool"}));
}

TEST(Creation, Randint) {
  Result r = run("randint", {}, {ai("low", -5), ai("high", 5), al("shape", {2, 2})});
  EXPECT_TRUE(has_out(r, 0, GN_I64, {2, 2}));
  EXPECT_TRUE(has_out(run("randint", {}, {ai("low", 0), ai("high", 256), al("shape", {1}), ai("dtype", GN_U8)}), 0,
                      GN_U8, {1}));
  EXPECT_TRUE(has_out(run("randint", {}, {ai("low", 0), ai("high", 10), al("shape", {1}), ai("dtype", GN_F32)}), 0,
                      GN_F32, {1}));
  EXPECT_TRUE(fails(run("randint", {}, {ai("low", 3), ai("high", 3), al("shape", {1})}), GN_ERR_INVALID_ARGUMENT,
                    "randint", {"low 3", "high 3"}));
  EXPECT_TRUE(fails(run("randint", {}, {ai("low", 0), ai("high", (int64_t{1} << 32) + 1), al("shape", {1})}),
                    GN_ERR_INVALID_ARGUMENT, "randint", {"2^32"}));
  EXPECT_TRUE(
      has_out(run("randint", {}, {ai("low", -(int64_t{1} << 31)), ai("high", int64_t{1} << 31), al("shape", {1})}), 0,
              GN_I64, {1}));
  EXPECT_TRUE(fails(run("randint", {}, {ai("low", 0), ai("high", 300), al("shape", {1}), ai("dtype", GN_U8)}),
                    GN_ERR_INVALID_ARGUMENT, "randint", {"[0, 300)", "uint8"}));
}

TEST(Inplace, FillHasNoOutputs) {
  Result r = run("fill", {T(GN_BF16, {3})}, {af("value", 2)});
  ASSERT_TRUE(r.ok()) << r.msg;
  EXPECT_EQ(r.out.size(), 0u);
  EXPECT_EQ(r.kernel_dtype, GN_BF16);
}

TEST(Inplace, SgdStep) {
  Result r = run("sgd_step", {T(GN_F32, {4, 3}), T(GN_BF16, {4, 3}), T(GN_F32, {4, 3})}, {af("lr", 0.1)});
  ASSERT_TRUE(r.ok()) << r.msg;
  EXPECT_EQ(r.out.size(), 0u);
  EXPECT_EQ(r.kernel_dtype, GN_F32);
  EXPECT_EQ(r.in_dtypes[1], GN_F32);  // read-only grad cast to the param dtype
  EXPECT_EQ(r.in_dtypes[2], GN_F32);
  EXPECT_TRUE(run("sgd_step", {T(GN_F16, {2}), T(GN_F16, {2})}, {af("lr", 0.1)}).ok());
  EXPECT_TRUE(fails(run("sgd_step", {T(GN_F32, {4, 3}), T(GN_F32, {3, 4})}, {af("lr", 0.1)}), GN_ERR_SHAPE, "sgd_step",
                    {"grad shape (3, 4)", "(4, 3)"}));
  EXPECT_TRUE(fails(run("sgd_step", {T(GN_F32, {2}), T(GN_F32, {2}), T(GN_F32, {3})}, {af("lr", 0.1)}), GN_ERR_SHAPE,
                    "sgd_step", {"momentum_buf", "(3)"}));
  EXPECT_TRUE(fails(run("sgd_step", {T(GN_I32, {2}), T(GN_F32, {2})}, {af("lr", 0.1)}), GN_ERR_DTYPE, "sgd_step",
                    {"param", "int32"}));
}

TEST(Inplace, AdamwStep) {
  Result r = run("adamw_step", {T(GN_BF16, {8}), T(GN_BF16, {8}), T(GN_F32, {8}), T(GN_F32, {8})}, {af("lr", 1e-3)});
  ASSERT_TRUE(r.ok()) << r.msg;
  EXPECT_EQ(r.out.size(), 0u);
  EXPECT_EQ(r.kernel_dtype, GN_BF16);
  EXPECT_TRUE(
      fails(run("adamw_step", {T(GN_F32, {8}), T(GN_F32, {8}), T(GN_F32, {8}), T(GN_F32, {7})}, {af("lr", 1e-3)}),
            GN_ERR_SHAPE, "adamw_step", {"exp_avg_sq", "(7)"}));
  EXPECT_TRUE(
      fails(run("adamw_step", {T(GN_F32, {8}), T(GN_F32, {8}), T(GN_I64, {8}), T(GN_F32, {8})}, {af("lr", 1e-3)}),
            GN_ERR_DTYPE, "adamw_step", {"exp_avg", "int64"}));
}

TEST(Inplace, MultiTensorHelpers) {
  Result r = run("multi_scale_", {T(GN_F32, {}), T(GN_F16, {3}), T(GN_F32, {2, 2})});
  ASSERT_TRUE(r.ok()) << r.msg;
  EXPECT_EQ(r.out.size(), 0u);
  EXPECT_EQ(r.kernel_dtype, GN_F32);
  EXPECT_TRUE(run("multi_scale_", {T(GN_F32, {1}), T(GN_F32, {3})}).ok());
  EXPECT_TRUE(
      fails(run("multi_scale_", {T(GN_F32, {2}), T(GN_F32, {3})}), GN_ERR_SHAPE, "multi_scale_", {"scale", "(2)"}));
  EXPECT_TRUE(run("multi_unscale_check_", {T(GN_F32, {}), T(GN_F32, {}), T(GN_F16, {5})}).ok());
  EXPECT_TRUE(fails(run("multi_unscale_check_", {T(GN_F32, {}), T(GN_F64, {}), T(GN_F16, {5})}), GN_ERR_DTYPE,
                    "multi_unscale_check_", {"found_inf", "float64"}));
  EXPECT_TRUE(fails(run("multi_unscale_check_", {T(GN_F32, {3}), T(GN_F32, {}), T(GN_F16, {5})}), GN_ERR_SHAPE,
                    "multi_unscale_check_", {"inv_scale", "(3)"}));
  EXPECT_TRUE(fails(run("multi_unscale_check_", {T(GN_F32, {}), T(GN_F32, {1, 2}), T(GN_F16, {5})}), GN_ERR_SHAPE,
                    "multi_unscale_check_", {"found_inf", "(1, 2)"}));
}

TEST(MultiSumSq, FloatScalarOut) {
  Result r = run("multi_sum_sq", {T(GN_F32, {3}), T(GN_BF16, {2, 2})});
  EXPECT_TRUE(has_out(r, 0, GN_F32, {}));
  EXPECT_EQ(r.kernel_dtype, GN_F32);
  EXPECT_EQ(r.in_dtypes[1], GN_BF16);  // not cast
  r = run("multi_sum_sq", {T(GN_F32, {3}), T(GN_F64, {1})});
  EXPECT_TRUE(has_out(r, 0, GN_F64, {}));
  EXPECT_EQ(r.kernel_dtype, GN_F64);
  EXPECT_TRUE(
      fails(run("multi_sum_sq", {T(GN_F32, {3}), T(GN_I32, {1})}), GN_ERR_DTYPE, "multi_sum_sq", {"input 1", "int32"}));
}

}  // namespace
}  // namespace genesis::test

// Inference of the elementwise ops: unary, cast/copy, binary with promotion,
// comparisons, logical ops, where; plus the wrapper's own input checks.
#include "infer_test_util.h"

namespace genesis::test {
namespace {

TEST(UnarySame, KeepsDtypeAndShape) {
  Result r = run("abs", {T(GN_I32, {2, 3})});
  EXPECT_TRUE(has_out(r, 0, GN_I32, {2, 3}));
  EXPECT_EQ(r.kernel_dtype, GN_I32);
  EXPECT_EQ(r.in_dtypes[0], GN_I32);
  r = run("clamp", {T(GN_F16, {4})}, {af("min", 0.0)});
  EXPECT_TRUE(has_out(r, 0, GN_F16, {4}));
  EXPECT_TRUE(has_out(run("floor", {T(GN_BF16, {})}), 0, GN_BF16, {}));
  EXPECT_TRUE(has_out(run("sign", {T(GN_BOOL, {3})}), 0, GN_BOOL, {3}));
}

TEST(UnarySame, BoolRules) {
  EXPECT_TRUE(fails(run("neg", {T(GN_BOOL, {3})}), GN_ERR_DTYPE, "neg", {"bool"}));
  EXPECT_TRUE(fails(run("relu", {T(GN_BOOL, {3})}), GN_ERR_DTYPE, "relu", {"bool"}));
  // square of bool: computed in int64.
  Result r = run("square", {T(GN_BOOL, {3})});
  EXPECT_TRUE(has_out(r, 0, GN_I64, {3}));
  EXPECT_EQ(r.in_dtypes[0], GN_I64);
  EXPECT_EQ(r.kernel_dtype, GN_I64);
}

TEST(UnaryFloat, IntsComputedInFloat32) {
  Result r = run("exp", {T(GN_I32, {2})});
  EXPECT_TRUE(has_out(r, 0, GN_F32, {2}));
  EXPECT_EQ(r.in_dtypes[0], GN_F32);
  EXPECT_EQ(r.kernel_dtype, GN_F32);
  r = run("sqrt", {T(GN_F64, {2, 2})});
  EXPECT_TRUE(has_out(r, 0, GN_F64, {2, 2}));
  EXPECT_EQ(r.in_dtypes[0], GN_F64);
  EXPECT_TRUE(has_out(run("sigmoid", {T(GN_BOOL, {})}), 0, GN_F32, {}));
  EXPECT_TRUE(has_out(run("gelu", {T(GN_BF16, {5})}, {ai("approximate", 1)}), 0, GN_BF16, {5}));
  EXPECT_TRUE(fails(run("gelu", {T(GN_F32, {5})}, {ai("approximate", 2)}), GN_ERR_INVALID_ARGUMENT, "gelu",
                    {"approximate", "2"}));
}

TEST(UnaryBool, BoolOutNoCast) {
  Result r = run("isnan", {T(GN_F16, {2, 5})});
  EXPECT_TRUE(has_out(r, 0, GN_BOOL, {2, 5}));
  EXPECT_EQ(r.in_dtypes[0], GN_F16);
  EXPECT_EQ(r.kernel_dtype, GN_F16);
  EXPECT_TRUE(has_out(run("logical_not", {T(GN_I64, {1})}), 0, GN_BOOL, {1}));
}

TEST(UnarySameFloat, Bernoulli) {
  EXPECT_TRUE(has_out(run("bernoulli", {T(GN_F32, {3, 3})}), 0, GN_F32, {3, 3}));
  EXPECT_TRUE(fails(run("bernoulli", {T(GN_I64, {3})}), GN_ERR_DTYPE, "bernoulli", {"int64"}));
}

TEST(UnarySameAny, TriuTril) {
  EXPECT_TRUE(has_out(run("triu", {T(GN_BOOL, {2, 3, 4})}), 0, GN_BOOL, {2, 3, 4}));
  EXPECT_TRUE(has_out(run("tril", {T(GN_I32, {3, 3})}, {ai("diagonal", -1)}), 0, GN_I32, {3, 3}));
  EXPECT_TRUE(fails(run("triu", {T(GN_F32, {4})}), GN_ERR_SHAPE, "triu", {"(4)"}));
}

TEST(Cast, ToAttrDtype) {
  Result r = run("cast", {T(GN_F32, {2, 3})}, {ai("dtype", GN_BF16)});
  EXPECT_TRUE(has_out(r, 0, GN_BF16, {2, 3}));
  EXPECT_EQ(r.kernel_dtype, GN_F32);  // picked by the source dtype
  EXPECT_EQ(r.in_dtypes[0], GN_F32);
  EXPECT_TRUE(fails(run("cast", {T(GN_F32, {2})}, {ai("dtype", 42)}), GN_ERR_INVALID_ARGUMENT, "cast", {"42"}));
  EXPECT_TRUE(fails(run("cast", {T(GN_F32, {2})}, {ai("dtype", -1)}), GN_ERR_INVALID_ARGUMENT, "cast", {"-1"}));
}

TEST(Copy, SameMeta) {
  Result r = run("copy", {T(GN_U8, {7, 0})});
  EXPECT_TRUE(has_out(r, 0, GN_U8, {7, 0}));
}

TEST(BinaryArith, BroadcastAndPromote) {
  Result r = run("add", {T(GN_F32, {2, 3}), T(GN_F32, {3})});
  EXPECT_TRUE(has_out(r, 0, GN_F32, {2, 3}));
  // int tensor + Python float -> float32, both inputs cast.
  r = run("mul", {T(GN_I32, {4, 1}), S(GN_F64)});
  EXPECT_TRUE(has_out(r, 0, GN_F32, {4, 1}));
  EXPECT_EQ(r.in_dtypes[0], GN_F32);
  EXPECT_EQ(r.in_dtypes[1], GN_F32);
  EXPECT_EQ(r.kernel_dtype, GN_F32);
  // f16 tensor + 0-d f64 tensor -> f16 (0-d does not outrank).
  r = run("sub", {T(GN_F16, {2}), T(GN_F64, {})});
  EXPECT_TRUE(has_out(r, 0, GN_F16, {2}));
  EXPECT_EQ(r.in_dtypes[1], GN_F16);
  // i8 + u8 -> i32.
  EXPECT_TRUE(has_out(run("maximum", {T(GN_I8, {3}), T(GN_U8, {3})}), 0, GN_I32, {3}));
  EXPECT_TRUE(has_out(run("pow", {T(GN_BOOL, {3}), T(GN_BOOL, {1})}), 0, GN_BOOL, {3}));
  EXPECT_TRUE(has_out(run("mul", {T(GN_BOOL, {3}), T(GN_BOOL, {3})}), 0, GN_BOOL, {3}));
  EXPECT_TRUE(has_out(run("add", {T(GN_I64, {2}), T(GN_I64, {2})}, {af("alpha", 3)}), 0, GN_I64, {2}));
}

TEST(BinaryArith, Errors) {
  EXPECT_TRUE(fails(run("add", {T(GN_F32, {2, 3}), T(GN_F32, {4})}), GN_ERR_SHAPE, "add",
                    {"shapes (2, 3) and (4) cannot be broadcast"}));
  EXPECT_TRUE(fails(run("sub", {T(GN_BOOL, {2}), T(GN_BOOL, {2})}), GN_ERR_DTYPE, "sub", {"bool"}));
  {  // torch: bool + bool stays bool (logical or)
    Result r = run("add", {T(GN_BOOL, {2}), S(GN_BOOL)});
    ASSERT_TRUE(r.ok()) << r.msg;
    EXPECT_EQ(r.out[0].dtype, GN_BOOL);
  }
  EXPECT_TRUE(fails(run("add", {T(GN_I32, {2}), T(GN_I64, {2})}, {af("alpha", 1.5)}), GN_ERR_INVALID_ARGUMENT, "add",
                    {"alpha 1.5", "int64"}));
}

TEST(BinaryDiv, RoundingModes) {
  Result r = run("div", {T(GN_I64, {2}), T(GN_I64, {2})});
  EXPECT_TRUE(has_out(r, 0, GN_F32, {2}));
  EXPECT_EQ(r.in_dtypes[0], GN_F32);
  EXPECT_EQ(r.in_dtypes[1], GN_F32);
  r = run("div", {T(GN_I64, {2}), S(GN_I64)}, {ai("rounding_mode", 2)});
  EXPECT_TRUE(has_out(r, 0, GN_I64, {2}));
  EXPECT_EQ(r.kernel_dtype, GN_I64);
  EXPECT_TRUE(has_out(run("div", {T(GN_F16, {2}), T(GN_F32, {2})}, {ai("rounding_mode", 1)}), 0, GN_F32, {2}));
  EXPECT_TRUE(fails(run("div", {T(GN_F32, {2}), T(GN_F32, {2})}, {ai("rounding_mode", 3)}), GN_ERR_INVALID_ARGUMENT,
                    "div", {"rounding_mode", "3"}));
  EXPECT_TRUE(
      fails(run("div", {T(GN_BOOL, {2}), T(GN_BOOL, {2})}, {ai("rounding_mode", 2)}), GN_ERR_DTYPE, "div", {"bool"}));
}

TEST(BinaryCompare, BoolOutCommonKernel) {
  Result r = run("lt", {T(GN_I32, {3, 1}), T(GN_F16, {1, 4})});
  EXPECT_TRUE(has_out(r, 0, GN_BOOL, {3, 4}));
  EXPECT_EQ(r.in_dtypes[0], GN_F16);
  EXPECT_EQ(r.in_dtypes[1], GN_F16);
  EXPECT_EQ(r.kernel_dtype, GN_F16);
  EXPECT_TRUE(fails(run("eq", {T(GN_F32, {3}), T(GN_F32, {2})}), GN_ERR_SHAPE, "eq", {"(3)", "(2)"}));
}

TEST(BinaryLogical, CastsToBool) {
  Result r = run("logical_and", {T(GN_I32, {3}), T(GN_F32, {})});
  EXPECT_TRUE(has_out(r, 0, GN_BOOL, {3}));
  EXPECT_EQ(r.in_dtypes[0], GN_BOOL);
  EXPECT_EQ(r.in_dtypes[1], GN_BOOL);
  EXPECT_EQ(r.kernel_dtype, GN_BOOL);
}

TEST(Where, BroadcastsAllThree) {
  Result r = run("where", {T(GN_BOOL, {2, 1, 1}), T(GN_I32, {3, 1}), S(GN_F64)});
  EXPECT_TRUE(has_out(r, 0, GN_F32, {2, 3, 1}));
  EXPECT_EQ(r.in_dtypes[0], GN_BOOL);
  EXPECT_EQ(r.in_dtypes[1], GN_F32);
  EXPECT_EQ(r.in_dtypes[2], GN_F32);
  EXPECT_EQ(r.kernel_dtype, GN_F32);
  EXPECT_TRUE(has_out(run("where", {T(GN_BOOL, {4}), T(GN_I32, {4}), S(GN_I64)}), 0, GN_I32, {4}));
  EXPECT_TRUE(fails(run("where", {T(GN_U8, {2}), T(GN_F32, {2}), T(GN_F32, {2})}), GN_ERR_DTYPE, "where", {"uint8"}));
  EXPECT_TRUE(
      fails(run("where", {T(GN_BOOL, {3}), T(GN_F32, {2}), T(GN_F32, {2})}), GN_ERR_SHAPE, "where", {"(3)", "(2)"}));
}

TEST(InferWrapper, RejectsBadInputsWithoutThrowing) {
  gn_tensor_meta bad = T(GN_F32, {2});
  bad.dtype = 99;
  EXPECT_TRUE(fails(run("neg", {bad}), GN_ERR_INVALID_ARGUMENT, "neg", {"dtype 99"}));
  gn_tensor_meta neg = T(GN_F32, {2, -1});
  EXPECT_TRUE(fails(run("neg", {neg}), GN_ERR_INVALID_ARGUMENT, "neg", {"negative"}));
  gn_tensor_meta deep = T(GN_F32, {});
  deep.ndim = 9;
  EXPECT_TRUE(fails(run("neg", {deep}), GN_ERR_INVALID_ARGUMENT, "neg", {"rank 9"}));
  // Wrong input count and wrong attribute kind.
  EXPECT_TRUE(fails(call_infer(&core::infer_binary_arith, "add", {T(GN_F32, {1})}, {}, 1), GN_ERR_INVALID_ARGUMENT,
                    "add", {"2 inputs, got 1"}));
  gn_attr_value f{};
  f.kind = GN_ATTR_FLOAT;
  EXPECT_TRUE(fails(call_infer(&core::infer_cast, "cast", {T(GN_F32, {1})}, {f}, 1), GN_ERR_INVALID_ARGUMENT, "cast",
                    {"kind int"}));
  EXPECT_TRUE(fails(call_infer(&core::infer_cast, "cast", {T(GN_F32, {1})}, {}, 1), GN_ERR_INVALID_ARGUMENT, "cast",
                    {"missing"}));
  // No room for the output.
  EXPECT_TRUE(fails(call_infer(&core::infer_copy, "copy", {T(GN_F32, {1})}, {}, 0), GN_ERR_INVALID_ARGUMENT, "copy",
                    {"1 outputs"}));
}

}  // namespace
}  // namespace genesis::test

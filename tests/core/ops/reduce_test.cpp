// Inference of the reductions and the softmax family.
#include "infer_test_util.h"

namespace genesis::test {
namespace {

TEST(ReduceSum, DimsKeepdimAndDtype) {
  // dims [] = all; int input accumulates in int64.
  Result r = run("sum", {T(GN_I32, {2, 3})});
  EXPECT_TRUE(has_out(r, 0, GN_I64, {}));
  EXPECT_EQ(r.in_dtypes[0], GN_I64);
  EXPECT_EQ(r.kernel_dtype, GN_I64);
  r = run("sum", {T(GN_F16, {2, 3, 4})}, {al("dims", {-1, 0}), ai("keepdim", 1)});
  EXPECT_TRUE(has_out(r, 0, GN_F16, {1, 3, 1}));
  EXPECT_EQ(r.in_dtypes[0], GN_F16);
  EXPECT_TRUE(has_out(run("prod", {T(GN_BOOL, {2, 3})}, {al("dims", {1})}), 0, GN_I64, {2}));
  r = run("sum", {T(GN_F32, {2, 3})}, {al("dims", {1}), ai("dtype", GN_F64)});
  EXPECT_TRUE(has_out(r, 0, GN_F64, {2}));
  EXPECT_EQ(r.in_dtypes[0], GN_F64);
  EXPECT_EQ(r.kernel_dtype, GN_F64);
  // 0-d input: dim 0 / -1 allowed, stays 0-d.
  EXPECT_TRUE(has_out(run("sum", {T(GN_F32, {})}, {al("dims", {-1})}), 0, GN_F32, {}));
  // Empty tensors reduce fine.
  EXPECT_TRUE(has_out(run("sum", {T(GN_F32, {0, 3})}, {al("dims", {0})}), 0, GN_F32, {3}));
}

TEST(ReduceSum, Errors) {
  EXPECT_TRUE(fails(run("sum", {T(GN_F32, {2, 3})}, {al("dims", {3})}), GN_ERR_INDEX, "sum",
                    {"dim 3 is out of range for a tensor of rank 2"}));
  EXPECT_TRUE(fails(run("sum", {T(GN_F32, {2, 3})}, {al("dims", {-3})}), GN_ERR_INDEX, "sum", {"dim -3"}));
  EXPECT_TRUE(fails(run("sum", {T(GN_F32, {2, 3})}, {al("dims", {1, -1})}), GN_ERR_INVALID_ARGUMENT, "sum",
                    {"dim 1 appears more than once", "[1, -1]"}));
  EXPECT_TRUE(fails(run("prod", {T(GN_F32, {2})}, {ai("dtype", 12)}), GN_ERR_INVALID_ARGUMENT, "prod", {"12"}));
}

TEST(ReduceFloat, FloatResults) {
  Result r = run("mean", {T(GN_I64, {4, 5})}, {al("dims", {0})});
  EXPECT_TRUE(has_out(r, 0, GN_F32, {5}));
  EXPECT_EQ(r.in_dtypes[0], GN_F32);
  r = run("mean", {T(GN_F16, {4, 5})}, {ai("dtype", GN_F64), ai("keepdim", 1)});
  EXPECT_TRUE(has_out(r, 0, GN_F64, {1, 1}));
  EXPECT_EQ(r.in_dtypes[0], GN_F64);
  // var/std: correction sits between dims and keepdim.
  EXPECT_TRUE(has_out(run("var", {T(GN_BF16, {4, 5})}, {al("dims", {1}), af("correction", 0), ai("keepdim", 1)}), 0,
                      GN_BF16, {4, 1}));
  EXPECT_TRUE(has_out(run("std", {T(GN_F64, {4, 5})}), 0, GN_F64, {}));
  EXPECT_TRUE(has_out(run("logsumexp", {T(GN_F32, {2, 3, 4})}, {al("dims", {1, 2})}), 0, GN_F32, {2}));
  Result n = run("norm", {T(GN_I32, {3, 4})}, {af("p", 1), al("dims", {-1}), ai("keepdim", 1)});
  EXPECT_TRUE(has_out(n, 0, GN_F32, {3, 1}));
  EXPECT_EQ(n.kernel_dtype, GN_F32);
  EXPECT_TRUE(fails(run("mean", {T(GN_F32, {2})}, {ai("dtype", GN_I64)}), GN_ERR_DTYPE, "mean", {"int64"}));
  EXPECT_TRUE(fails(run("norm", {T(GN_F32, {2})}, {al("dims", {1})}), GN_ERR_INDEX, "norm", {"dim 1", "rank 1"}));
}

TEST(ReduceSame, MaxMin) {
  Result r = run("max", {T(GN_I8, {2, 3})}, {al("dims", {0})});
  EXPECT_TRUE(has_out(r, 0, GN_I8, {3}));
  EXPECT_EQ(r.kernel_dtype, GN_I8);
  EXPECT_EQ(r.in_dtypes[0], GN_I8);
  EXPECT_TRUE(has_out(run("min", {T(GN_BOOL, {2, 3})}, {ai("keepdim", 1)}), 0, GN_BOOL, {1, 1}));
  // Reducing a non-empty dim of an empty tensor is fine.
  EXPECT_TRUE(has_out(run("max", {T(GN_F32, {0, 3})}, {al("dims", {1})}), 0, GN_F32, {0}));
  EXPECT_TRUE(fails(run("max", {T(GN_F32, {0, 3})}), GN_ERR_SHAPE, "max", {"(0, 3)", "empty"}));
  EXPECT_TRUE(fails(run("min", {T(GN_F32, {0, 3})}, {al("dims", {0})}), GN_ERR_SHAPE, "min", {"dim 0", "size 0"}));
}

TEST(ReduceArg, ArgmaxArgmin) {
  Result r = run("argmax", {T(GN_F32, {2, 3})});
  EXPECT_TRUE(has_out(r, 0, GN_I64, {}));
  EXPECT_EQ(r.kernel_dtype, GN_F32);
  EXPECT_EQ(r.in_dtypes[0], GN_F32);
  EXPECT_TRUE(has_out(run("argmax", {T(GN_F32, {2, 3})}, {ai("keepdim", 1)}), 0, GN_I64, {1, 1}));
  EXPECT_TRUE(has_out(run("argmin", {T(GN_I32, {2, 3})}, {ai("dim", -1)}), 0, GN_I64, {2}));
  EXPECT_TRUE(has_out(run("argmin", {T(GN_I32, {2, 3})}, {ai("dim", 0), ai("keepdim", 1)}), 0, GN_I64, {1, 3}));
  EXPECT_TRUE(has_out(run("argmax", {T(GN_F32, {0, 3})}, {ai("dim", 1)}), 0, GN_I64, {0}));
  EXPECT_TRUE(fails(run("argmax", {T(GN_F32, {0, 3})}), GN_ERR_SHAPE, "argmax", {"(0, 3)"}));
  EXPECT_TRUE(fails(run("argmax", {T(GN_F32, {0, 3})}, {ai("dim", 0)}), GN_ERR_SHAPE, "argmax", {"dim 0", "size 0"}));
  EXPECT_TRUE(fails(run("argmin", {T(GN_F32, {2, 3})}, {ai("dim", 2)}), GN_ERR_INDEX, "argmin", {"dim 2", "rank 2"}));
  EXPECT_TRUE(fails(run("argmax", {T(GN_BOOL, {3})}), GN_ERR_DTYPE, "argmax", {"bool"}));
}

TEST(Softmax, Dtypes) {
  Result r = run("softmax", {T(GN_F16, {2, 5})});
  EXPECT_TRUE(has_out(r, 0, GN_F16, {2, 5}));
  EXPECT_EQ(r.kernel_dtype, GN_F16);
  r = run("log_softmax", {T(GN_I64, {2, 5})}, {ai("dim", 0)});
  EXPECT_TRUE(has_out(r, 0, GN_F32, {2, 5}));
  EXPECT_EQ(r.in_dtypes[0], GN_F32);
  r = run("softmax", {T(GN_BF16, {3})}, {ai("dtype", GN_F32)});
  EXPECT_TRUE(has_out(r, 0, GN_F32, {3}));
  EXPECT_EQ(r.in_dtypes[0], GN_F32);
  EXPECT_EQ(r.kernel_dtype, GN_F32);
  EXPECT_TRUE(fails(run("softmax", {T(GN_F32, {3})}, {ai("dtype", GN_I32)}), GN_ERR_DTYPE, "softmax", {"int32"}));
  EXPECT_TRUE(fails(run("softmax", {T(GN_F32, {3, 4})}, {ai("dim", 2)}), GN_ERR_INDEX, "softmax", {"dim 2", "rank 2"}));
}

TEST(SoftmaxBackward, SameShapesCommonFloat) {
  Result r = run("softmax_backward", {T(GN_F32, {2, 5}), T(GN_F16, {2, 5})});
  EXPECT_TRUE(has_out(r, 0, GN_F32, {2, 5}));
  EXPECT_EQ(r.in_dtypes[0], GN_F32);
  EXPECT_EQ(r.in_dtypes[1], GN_F32);
  EXPECT_EQ(r.kernel_dtype, GN_F32);
  r = run("log_softmax_backward", {T(GN_BF16, {4}), T(GN_BF16, {4})});
  EXPECT_TRUE(has_out(r, 0, GN_BF16, {4}));
  EXPECT_TRUE(has_out(run("softmax_backward", {T(GN_I64, {4}), T(GN_I64, {4})}), 0, GN_F32, {4}));
  EXPECT_TRUE(fails(run("softmax_backward", {T(GN_F32, {2, 5}), T(GN_F32, {5, 2})}), GN_ERR_SHAPE, "softmax_backward",
                    {"(2, 5)", "(5, 2)"}));
  EXPECT_TRUE(fails(run("softmax_backward", {T(GN_F32, {2, 5}), T(GN_F32, {2, 5})}, {ai("dim", -3)}), GN_ERR_INDEX,
                    "softmax_backward", {"dim -3"}));
}

}  // namespace
}  // namespace genesis::test

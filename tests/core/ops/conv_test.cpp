// Inference of conv2d and pooling (shapes as torch.nn.functional computes
// them) and their backward ops.
#include "infer_test_util.h"

namespace genesis::test {
namespace {

TEST(Conv2d, OutputSize) {
  // torch: conv2d(ones(1,3,5,5), ones(4,3,3,3), padding=1).shape == (1, 4, 5, 5)
  Result r = run("conv2d", {T(GN_F32, {1, 3, 5, 5}), T(GN_F32, {4, 3, 3, 3})}, {al("padding", {1, 1})});
  EXPECT_TRUE(has_out(r, 0, GN_F32, {1, 4, 5, 5}));
  EXPECT_EQ(r.kernel_dtype, GN_F32);
  // stride 2 given once: floor((5 + 2 - 2 - 1)/2) + 1 = 3.
  EXPECT_TRUE(has_out(
      run("conv2d", {T(GN_F32, {2, 3, 5, 5}), T(GN_F32, {4, 3, 3, 3})}, {al("stride", {2}), al("padding", {1})}), 0,
      GN_F32, {2, 4, 3, 3}));
  // Dilation 2, asymmetric kernel: H: 9 - 2*2 - 1 + 1 = 5, W: 9 - 2*0 - 1 + 1 = 9.
  EXPECT_TRUE(has_out(run("conv2d", {T(GN_F32, {1, 1, 9, 9}), T(GN_F32, {1, 1, 3, 1})}, {al("dilation", {2, 2})}), 0,
                      GN_F32, {1, 1, 5, 9}));
  // groups: C 4 = 2 groups of 2, O 6; bias (O); bf16 + f32 -> f32, all cast.
  r = run("conv2d", {T(GN_BF16, {1, 4, 3, 3}), T(GN_F32, {6, 2, 1, 1}), T(GN_F32, {6})}, {ai("groups", 2)});
  EXPECT_TRUE(has_out(r, 0, GN_F32, {1, 6, 3, 3}));
  EXPECT_EQ(r.in_dtypes[0], GN_F32);
  EXPECT_EQ(r.in_dtypes[2], GN_F32);
  EXPECT_EQ(r.kernel_dtype, GN_F32);
  // Empty batch is fine.
  EXPECT_TRUE(has_out(run("conv2d", {T(GN_F16, {0, 3, 4, 4}), T(GN_F16, {2, 3, 2, 2})}), 0, GN_F16, {0, 2, 3, 3}));
}

TEST(Conv2d, Errors) {
  const auto x = T(GN_F32, {1, 3, 5, 5}), w = T(GN_F32, {4, 3, 3, 3});
  EXPECT_TRUE(fails(run("conv2d", {T(GN_F32, {3, 5, 5}), w}), GN_ERR_SHAPE, "conv2d", {"4-D", "(3, 5, 5)"}));
  EXPECT_TRUE(fails(run("conv2d", {x, T(GN_F32, {4, 3, 3})}), GN_ERR_SHAPE, "conv2d", {"weight", "(4, 3, 3)"}));
  EXPECT_TRUE(fails(run("conv2d", {x, T(GN_F32, {4, 2, 3, 3})}), GN_ERR_SHAPE, "conv2d",
                    {"(4, 2, 3, 3)", "(1, 3, 5, 5)", "has 3"}));
  EXPECT_TRUE(fails(run("conv2d", {x, T(GN_F32, {4, 1, 3, 3})}, {ai("groups", 2)}), GN_ERR_SHAPE, "conv2d",
                    {"input channels 3", "groups 2"}));
  EXPECT_TRUE(fails(run("conv2d", {T(GN_F32, {1, 4, 5, 5}), T(GN_F32, {3, 2, 3, 3})}, {ai("groups", 2)}), GN_ERR_SHAPE,
                    "conv2d", {"output channels 3"}));
  EXPECT_TRUE(fails(run("conv2d", {x, w}, {ai("groups", 0)}), GN_ERR_INVALID_ARGUMENT, "conv2d", {"groups", "0"}));
  EXPECT_TRUE(fails(run("conv2d", {x, w, T(GN_F32, {3})}), GN_ERR_SHAPE, "conv2d", {"bias shape (3)", "(4)"}));
  EXPECT_TRUE(fails(run("conv2d", {T(GN_F32, {1, 3, 2, 2}), w}), GN_ERR_SHAPE, "conv2d",
                    {"(1, 3, 2, 2)", "smaller than the kernel (3, 3)"}));
  EXPECT_TRUE(
      fails(run("conv2d", {x, w}, {al("stride", {0, 1})}), GN_ERR_INVALID_ARGUMENT, "conv2d", {"stride", "[0, 1]"}));
  EXPECT_TRUE(fails(run("conv2d", {x, w}, {al("padding", {1, 1, 1})}), GN_ERR_INVALID_ARGUMENT, "conv2d",
                    {"padding", "1 or 2 values"}));
  EXPECT_TRUE(fails(run("conv2d", {x, w}, {al("padding", {-1})}), GN_ERR_INVALID_ARGUMENT, "conv2d", {"padding"}));
  EXPECT_TRUE(fails(run("conv2d", {x, w}, {al("dilation", {0})}), GN_ERR_INVALID_ARGUMENT, "conv2d", {"dilation"}));
  EXPECT_TRUE(fails(run("conv2d", {T(GN_I32, {1, 3, 5, 5}), w}), GN_ERR_DTYPE, "conv2d", {"int32"}));
}

TEST(Conv2d, Backward) {
  Result r = run("conv2d_backward", {T(GN_F32, {2, 4, 5, 5}), T(GN_F16, {2, 3, 5, 5}), T(GN_F16, {4, 3, 3, 3})},
                 {al("padding", {1, 1})});
  EXPECT_TRUE(has_out(r, 0, GN_F16, {2, 3, 5, 5}));
  EXPECT_TRUE(has_out(r, 1, GN_F16, {4, 3, 3, 3}));
  EXPECT_TRUE(has_out(r, 2, GN_F16, {4}));
  EXPECT_EQ(r.in_dtypes[0], GN_F16);
  EXPECT_EQ(r.kernel_dtype, GN_F16);
  EXPECT_TRUE(fails(run("conv2d_backward", {T(GN_F32, {2, 4, 3, 3}), T(GN_F32, {2, 3, 5, 5}), T(GN_F32, {4, 3, 3, 3})},
                        {al("padding", {1, 1})}),
                    GN_ERR_SHAPE, "conv2d_backward", {"grad_y shape (2, 4, 3, 3)", "(2, 4, 5, 5)"}));
  EXPECT_TRUE(fails(run("conv2d_backward", {T(GN_I32, {2, 4, 3, 3}), T(GN_F32, {2, 3, 5, 5}), T(GN_F32, {4, 3, 3, 3})}),
                    GN_ERR_DTYPE, "conv2d_backward", {"grad_y", "int32"}));
  EXPECT_TRUE(
      fails(run("conv2d", {T(GN_F32, {1, 3, 5, 5}), T(GN_F32, {4, 3, 3, 3})}, {al("padding", {int64_t{1} << 40})}),
            GN_ERR_INVALID_ARGUMENT, "conv2d", {"padding", "2^31"}));
}

TEST(Pool2d, MaxPoolShapes) {
  // torch: max_pool2d(ones(1,1,5,5), 3, 2, 1, ceil_mode=True).shape == (1, 1, 3, 3)
  Result r = run("max_pool2d", {T(GN_F32, {1, 1, 5, 5})},
                 {al("kernel", {3}), al("stride", {2}), al("padding", {1}), ai("ceil_mode", 1)});
  EXPECT_TRUE(has_out(r, 0, GN_F32, {1, 1, 3, 3}));
  EXPECT_TRUE(has_out(r, 1, GN_I64, {1, 1, 3, 3}));
  EXPECT_EQ(r.kernel_dtype, GN_F32);
  // ... and 6x6 gives 4x4.
  EXPECT_TRUE(has_out(run("max_pool2d", {T(GN_F32, {1, 1, 6, 6})},
                          {al("kernel", {3}), al("stride", {2}), al("padding", {1}), ai("ceil_mode", 1)}),
                      0, GN_F32, {1, 1, 4, 4}));
  // stride [] = kernel; 3-D input gives 3-D outputs.
  r = run("max_pool2d", {T(GN_BF16, {3, 4, 4})}, {al("kernel", {2, 2})});
  EXPECT_TRUE(has_out(r, 0, GN_BF16, {3, 2, 2}));
  EXPECT_TRUE(has_out(r, 1, GN_I64, {3, 2, 2}));
  // torch: max_pool2d(ones(1,1,4,4), 3, 2, 1, dilation=2).shape == (1, 1, 1, 1)
  EXPECT_TRUE(has_out(run("max_pool2d", {T(GN_F32, {1, 1, 4, 4})},
                          {al("kernel", {3}), al("stride", {2}), al("padding", {1}), al("dilation", {2})}),
                      0, GN_F32, {1, 1, 1, 1}));
  EXPECT_TRUE(
      has_out(run("max_pool2d", {T(GN_F32, {1, 1, 1, 1})}, {al("kernel", {3}), al("stride", {2}), al("padding", {1})}),
              0, GN_F32, {1, 1, 1, 1}));
}

TEST(Pool2d, AvgPool) {
  Result r = run("avg_pool2d", {T(GN_F32, {1, 1, 4, 4})},
                 {al("kernel", {3}), al("stride", {2}), al("padding", {1}), ai("ceil_mode", 1)});
  ASSERT_TRUE(r.ok()) << r.msg;
  EXPECT_EQ(r.out.size(), 1u);
  EXPECT_TRUE(has_out(r, 0, GN_F32, {1, 1, 3, 3}));  // torch: (1, 1, 3, 3)
  EXPECT_TRUE(has_out(run("avg_pool2d", {T(GN_I64, {2, 1, 4, 6})}, {al("kernel", {2})}), 0, GN_I64, {2, 1, 2, 3}));
  EXPECT_TRUE(
      fails(run("avg_pool2d", {T(GN_BOOL, {1, 1, 4, 4})}, {al("kernel", {2})}), GN_ERR_DTYPE, "avg_pool2d", {"bool"}));
}

TEST(Pool2d, Errors) {
  const auto x = T(GN_F32, {1, 1, 4, 4});
  EXPECT_TRUE(fails(run("max_pool2d", {x}, {al("kernel", {3}), al("stride", {2}), al("padding", {2})}),
                    GN_ERR_INVALID_ARGUMENT, "max_pool2d", {"padding (2, 2)", "kernel (3, 3)"}));
  EXPECT_TRUE(fails(run("max_pool2d", {T(GN_F32, {1, 1, 1, 1})}, {al("kernel", {3}), al("stride", {2})}), GN_ERR_SHAPE,
                    "max_pool2d", {"(1, 1, 1, 1)", "too small"}));
  EXPECT_TRUE(
      fails(run("max_pool2d", {T(GN_F32, {4, 4})}, {al("kernel", {2})}), GN_ERR_SHAPE, "max_pool2d", {"(4, 4)"}));
  EXPECT_TRUE(fails(run("max_pool2d", {T(GN_F32, {1, 0, 4, 4})}, {al("kernel", {2})}), GN_ERR_SHAPE, "max_pool2d",
                    {"non-empty"}));
  EXPECT_TRUE(fails(run("max_pool2d", {x}, {al("kernel", {0})}), GN_ERR_INVALID_ARGUMENT, "max_pool2d", {"kernel"}));
  EXPECT_TRUE(fails(run("max_pool2d", {x}, {al("kernel", {2}), al("stride", {1, 2, 3})}), GN_ERR_INVALID_ARGUMENT,
                    "max_pool2d", {"stride", "[1, 2, 3]"}));
  EXPECT_TRUE(
      fails(run("max_pool2d", {T(GN_I64, {1, 1, 4, 4})}, {al("kernel", {2})}), GN_ERR_DTYPE, "max_pool2d", {"int64"}));
}

TEST(Pool2d, Backward) {
  const auto x = T(GN_BF16, {2, 3, 8, 8});
  Result r = run("max_pool2d_backward", {T(GN_F32, {2, 3, 4, 4}), x, T(GN_I64, {2, 3, 4, 4})}, {al("kernel", {2})});
  EXPECT_TRUE(has_out(r, 0, GN_BF16, {2, 3, 8, 8}));
  EXPECT_EQ(r.in_dtypes[0], GN_BF16);
  EXPECT_EQ(r.kernel_dtype, GN_BF16);
  EXPECT_TRUE(
      fails(run("max_pool2d_backward", {T(GN_F32, {2, 3, 4, 4}), x, T(GN_I32, {2, 3, 4, 4})}, {al("kernel", {2})}),
            GN_ERR_DTYPE, "max_pool2d_backward", {"indices", "int32"}));
  EXPECT_TRUE(
      fails(run("max_pool2d_backward", {T(GN_F32, {2, 3, 4, 4}), x, T(GN_I64, {2, 3, 4, 3})}, {al("kernel", {2})}),
            GN_ERR_SHAPE, "max_pool2d_backward", {"indices shape (2, 3, 4, 3)"}));
  EXPECT_TRUE(has_out(run("avg_pool2d_backward", {T(GN_BF16, {2, 3, 4, 4}), x}, {al("kernel", {2})}), 0, GN_BF16,
                      {2, 3, 8, 8}));
  EXPECT_TRUE(fails(run("avg_pool2d_backward", {T(GN_BF16, {2, 3, 3, 3}), x}, {al("kernel", {2})}), GN_ERR_SHAPE,
                    "avg_pool2d_backward", {"grad_y shape (2, 3, 3, 3)", "(2, 3, 4, 4)"}));
}

}  // namespace
}  // namespace genesis::test

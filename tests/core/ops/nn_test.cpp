// Inference of matmul/bmm, layer and RMS norm, rope, SwiGLU, cross entropy and
// attention, forward and backward.
#include <cmath>

#include "infer_test_util.h"

namespace genesis::test {
namespace {

TEST(Matmul, TorchShapes) {
  EXPECT_TRUE(has_out(run("matmul", {T(GN_F32, {2, 3}), T(GN_F32, {3, 4})}), 0, GN_F32, {2, 4}));
  EXPECT_TRUE(has_out(run("matmul", {T(GN_F32, {3}), T(GN_F32, {3})}), 0, GN_F32, {}));
  EXPECT_TRUE(has_out(run("matmul", {T(GN_F32, {3}), T(GN_F32, {3, 4})}), 0, GN_F32, {4}));
  EXPECT_TRUE(has_out(run("matmul", {T(GN_F32, {2, 3}), T(GN_F32, {3})}), 0, GN_F32, {2}));
  EXPECT_TRUE(has_out(run("matmul", {T(GN_F32, {5, 1, 2, 3}), T(GN_F32, {4, 3, 6})}), 0, GN_F32, {5, 4, 2, 6}));
  EXPECT_TRUE(has_out(run("matmul", {T(GN_F32, {3}), T(GN_F32, {7, 3, 2})}), 0, GN_F32, {7, 2}));
  EXPECT_TRUE(has_out(run("matmul", {T(GN_F32, {7, 2, 3}), T(GN_F32, {3})}), 0, GN_F32, {7, 2}));
  // trans flags transpose the last two dims first.
  EXPECT_TRUE(has_out(run("matmul", {T(GN_F32, {2, 3}), T(GN_F32, {4, 3})}, {ai("trans_b", 1)}), 0, GN_F32, {2, 4}));
  EXPECT_TRUE(has_out(run("matmul", {T(GN_F32, {8, 3, 2}), T(GN_F32, {4, 3})}, {ai("trans_a", 1), ai("trans_b", 1)}), 0,
                      GN_F32, {8, 2, 4}));
  // Mixed dtypes promote, both cast.
  Result r = run("matmul", {T(GN_F16, {2, 3}), T(GN_F32, {3, 4})});
  EXPECT_TRUE(has_out(r, 0, GN_F32, {2, 4}));
  EXPECT_EQ(r.in_dtypes[0], GN_F32);
  EXPECT_EQ(r.in_dtypes[1], GN_F32);
  EXPECT_EQ(r.kernel_dtype, GN_F32);
  EXPECT_TRUE(has_out(run("matmul", {T(GN_I64, {2, 3}), T(GN_I64, {3, 1})}), 0, GN_I64, {2, 1}));
}

TEST(Matmul, Errors) {
  EXPECT_TRUE(fails(run("matmul", {T(GN_F32, {2, 3}), T(GN_F32, {4, 5})}), GN_ERR_SHAPE, "matmul",
                    {"inner dimensions differ: (2, 3) @ (4, 5)"}));
  EXPECT_TRUE(fails(run("matmul", {T(GN_F32, {2, 3}), T(GN_F32, {3, 4})}, {ai("trans_b", 1)}), GN_ERR_SHAPE, "matmul",
                    {"(2, 3) @ (3, 4) with trans_b"}));
  EXPECT_TRUE(fails(run("matmul", {T(GN_F32, {2, 2, 3}), T(GN_F32, {3, 3, 4})}), GN_ERR_SHAPE, "matmul",
                    {"batch dimensions (2) and (3)"}));
  EXPECT_TRUE(fails(run("matmul", {T(GN_F32, {}), T(GN_F32, {3})}), GN_ERR_SHAPE, "matmul", {"at least 1-D"}));
  EXPECT_TRUE(fails(run("matmul", {T(GN_F32, {3}), T(GN_F32, {3, 4})}, {ai("trans_a", 1)}), GN_ERR_INVALID_ARGUMENT,
                    "matmul", {"trans_a", "(3)"}));
  EXPECT_TRUE(fails(run("matmul", {T(GN_F32, {2, 3}), T(GN_F32, {3, 4})}, {ai("trans_a", 2)}), GN_ERR_INVALID_ARGUMENT,
                    "matmul", {"trans_a", "2"}));
  EXPECT_TRUE(fails(run("matmul", {T(GN_BOOL, {2, 3}), T(GN_F32, {3, 4})}), GN_ERR_DTYPE, "matmul", {"bool"}));
}

TEST(Bmm, ShapesAndErrors) {
  EXPECT_TRUE(has_out(run("bmm", {T(GN_BF16, {4, 2, 3}), T(GN_BF16, {4, 3, 5})}), 0, GN_BF16, {4, 2, 5}));
  EXPECT_TRUE(has_out(run("bmm", {T(GN_F32, {4, 3, 2}), T(GN_F32, {4, 5, 3})}, {ai("trans_a", 1), ai("trans_b", 1)}), 0,
                      GN_F32, {4, 2, 5}));
  Result r = run("bmm", {T(GN_F32, {1, 2, 3}), T(GN_F64, {1, 3, 1})});
  EXPECT_TRUE(has_out(r, 0, GN_F64, {1, 2, 1}));
  EXPECT_EQ(r.in_dtypes[0], GN_F64);
  EXPECT_TRUE(fails(run("bmm", {T(GN_F32, {2, 3}), T(GN_F32, {3, 4})}), GN_ERR_SHAPE, "bmm", {"3-D", "(2, 3)"}));
  EXPECT_TRUE(fails(run("bmm", {T(GN_F32, {4, 2, 3}), T(GN_F32, {5, 3, 2})}), GN_ERR_SHAPE, "bmm",
                    {"batch", "(4, 2, 3)", "(5, 3, 2)"}));
  EXPECT_TRUE(fails(run("bmm", {T(GN_F32, {4, 2, 3}), T(GN_F32, {4, 2, 3})}), GN_ERR_SHAPE, "bmm",
                    {"inner dimensions differ"}));
  EXPECT_TRUE(fails(run("bmm", {T(GN_F32, {4, 2, 3}), T(GN_BOOL, {4, 3, 2})}), GN_ERR_DTYPE, "bmm", {"bool"}));
}

TEST(LayerNorm, Forward) {
  Result r =
      run("layer_norm", {T(GN_BF16, {2, 3, 4}), T(GN_F32, {3, 4}), T(GN_BF16, {3, 4})}, {ai("normalized_ndim", 2)});
  EXPECT_TRUE(has_out(r, 0, GN_BF16, {2, 3, 4}));
  EXPECT_TRUE(has_out(r, 1, GN_F32, {2}));
  EXPECT_TRUE(has_out(r, 2, GN_F32, {2}));
  EXPECT_EQ(r.in_dtypes[1], GN_BF16);  // weight cast to x's dtype
  EXPECT_EQ(r.in_dtypes[2], GN_BF16);
  EXPECT_EQ(r.kernel_dtype, GN_BF16);
  r = run("layer_norm", {T(GN_F64, {5, 8})});
  EXPECT_TRUE(has_out(r, 1, GN_F64, {5}));
  EXPECT_TRUE(has_out(r, 2, GN_F64, {5}));
  EXPECT_TRUE(has_out(run("layer_norm", {T(GN_F32, {8})}), 1, GN_F32, {}));
  EXPECT_TRUE(fails(run("layer_norm", {T(GN_F32, {2, 3})}, {ai("normalized_ndim", 3)}), GN_ERR_INVALID_ARGUMENT,
                    "layer_norm", {"normalized_ndim 3", "(2, 3)"}));
  EXPECT_TRUE(fails(run("layer_norm", {T(GN_F32, {2, 3})}, {ai("normalized_ndim", 0)}), GN_ERR_INVALID_ARGUMENT,
                    "layer_norm", {"normalized_ndim 0"}));
  EXPECT_TRUE(fails(run("layer_norm", {T(GN_F32, {2, 3}), T(GN_F32, {4})}), GN_ERR_SHAPE, "layer_norm",
                    {"weight shape (4)", "(3)"}));
  EXPECT_TRUE(fails(run("layer_norm", {T(GN_F32, {2, 3}), T(GN_F32, {3}), T(GN_F32, {2})}), GN_ERR_SHAPE, "layer_norm",
                    {"bias shape (2)"}));
  EXPECT_TRUE(fails(run("layer_norm", {T(GN_I32, {2, 3})}), GN_ERR_DTYPE, "layer_norm", {"int32"}));
  EXPECT_TRUE(fails(run("layer_norm", {T(GN_F32, {2, 3})}, {af("eps", -1)}), GN_ERR_INVALID_ARGUMENT, "layer_norm",
                    {"eps", "-1"}));
}

TEST(LayerNorm, Backward) {
  Result r = run("layer_norm_backward",
                 {T(GN_F32, {2, 3, 4}), T(GN_F16, {2, 3, 4}), T(GN_F32, {2, 3}), T(GN_F32, {2, 3}), T(GN_F32, {4})});
  EXPECT_TRUE(has_out(r, 0, GN_F16, {2, 3, 4}));
  EXPECT_TRUE(has_out(r, 1, GN_F16, {4}));
  EXPECT_TRUE(has_out(r, 2, GN_F16, {4}));
  EXPECT_EQ(r.in_dtypes[0], GN_F16);  // grad_y cast to x's dtype
  EXPECT_EQ(r.in_dtypes[2], GN_F32);  // stats keep theirs
  EXPECT_EQ(r.in_dtypes[4], GN_F16);
  EXPECT_EQ(r.kernel_dtype, GN_F16);
  EXPECT_TRUE(
      fails(run("layer_norm_backward", {T(GN_F32, {2, 3, 4}), T(GN_F32, {2, 3, 4}), T(GN_F32, {2}), T(GN_F32, {2, 3})}),
            GN_ERR_SHAPE, "layer_norm_backward", {"mean shape (2)", "(2, 3)"}));
  EXPECT_TRUE(
      fails(run("layer_norm_backward", {T(GN_F32, {2, 4}), T(GN_F32, {2, 3, 4}), T(GN_F32, {2, 3}), T(GN_F32, {2, 3})}),
            GN_ERR_SHAPE, "layer_norm_backward", {"grad_y shape (2, 4)"}));
  EXPECT_TRUE(fails(run("layer_norm_backward",
                        {T(GN_F32, {2, 4}), T(GN_F32, {2, 4}), T(GN_F32, {2}), T(GN_F32, {2}), T(GN_F32, {2, 4})}),
                    GN_ERR_SHAPE, "layer_norm_backward", {"weight shape (2, 4)", "(4)"}));
  EXPECT_TRUE(fails(run("layer_norm_backward", {T(GN_F32, {2, 4}), T(GN_F32, {2, 4}), T(GN_F32, {2}), T(GN_I64, {2})}),
                    GN_ERR_DTYPE, "layer_norm_backward", {"rstd", "int64"}));
  EXPECT_TRUE(fails(run("layer_norm_backward", {T(GN_F32, {2, 4}), T(GN_I32, {2, 4}), T(GN_F32, {2}), T(GN_F32, {2})}),
                    GN_ERR_DTYPE, "layer_norm_backward", {"x", "int32"}));
}

TEST(RmsNorm, ForwardBackward) {
  Result r = run("rms_norm", {T(GN_BF16, {2, 7, 16}), T(GN_F32, {16})});
  EXPECT_TRUE(has_out(r, 0, GN_BF16, {2, 7, 16}));
  EXPECT_TRUE(has_out(r, 1, GN_F32, {2, 7}));
  EXPECT_EQ(r.in_dtypes[1], GN_BF16);
  EXPECT_TRUE(has_out(run("rms_norm", {T(GN_F64, {16})}), 1, GN_F64, {}));
  EXPECT_TRUE(fails(run("rms_norm", {T(GN_F32, {2, 16}), T(GN_F32, {2, 16})}), GN_ERR_SHAPE, "rms_norm",
                    {"weight shape (2, 16)", "(16)"}));
  EXPECT_TRUE(fails(run("rms_norm", {T(GN_F32, {})}), GN_ERR_SHAPE, "rms_norm", {"()"}));
  EXPECT_TRUE(fails(run("rms_norm", {T(GN_I64, {3})}), GN_ERR_DTYPE, "rms_norm", {"int64"}));
  EXPECT_TRUE(fails(run("rms_norm", {T(GN_F32, {3})}, {af("eps", -1e-6)}), GN_ERR_INVALID_ARGUMENT, "rms_norm",
                    {"eps", "-1e-06"}));

  r = run("rms_norm_backward", {T(GN_F32, {2, 16}), T(GN_BF16, {2, 16}), T(GN_F32, {2}), T(GN_BF16, {16})});
  EXPECT_TRUE(has_out(r, 0, GN_BF16, {2, 16}));
  EXPECT_TRUE(has_out(r, 1, GN_BF16, {16}));
  EXPECT_EQ(r.in_dtypes[0], GN_BF16);
  EXPECT_EQ(r.in_dtypes[2], GN_F32);
  EXPECT_TRUE(
      has_out(run("rms_norm_backward", {T(GN_F32, {2, 16}), T(GN_F32, {2, 16}), T(GN_F32, {2})}), 1, GN_F32, {16}));
  EXPECT_TRUE(fails(run("rms_norm_backward", {T(GN_F32, {2, 16}), T(GN_F32, {2, 16}), T(GN_F32, {16})}), GN_ERR_SHAPE,
                    "rms_norm_backward", {"rstd shape (16)", "(2)"}));
}

TEST(Rope, BroadcastToX) {
  Result r = run("rope", {T(GN_BF16, {2, 4, 6, 8}), T(GN_F32, {6, 8}), T(GN_F32, {1, 1, 6, 8})});
  EXPECT_TRUE(has_out(r, 0, GN_BF16, {2, 4, 6, 8}));
  EXPECT_EQ(r.in_dtypes[1], GN_BF16);
  EXPECT_EQ(r.in_dtypes[2], GN_BF16);
  EXPECT_EQ(r.kernel_dtype, GN_BF16);
  EXPECT_TRUE(
      has_out(run("rope_backward", {T(GN_F32, {3, 8}), T(GN_F32, {3, 8}), T(GN_F32, {3, 8})}), 0, GN_F32, {3, 8}));
  EXPECT_TRUE(fails(run("rope", {T(GN_F32, {2, 5}), T(GN_F32, {5}), T(GN_F32, {5})}), GN_ERR_SHAPE, "rope",
                    {"even", "(2, 5)"}));
  // cos of a larger shape would broadcast x, which is not allowed.
  EXPECT_TRUE(fails(run("rope", {T(GN_F32, {4, 8}), T(GN_F32, {2, 4, 8}), T(GN_F32, {8})}), GN_ERR_SHAPE, "rope",
                    {"cos of shape (2, 4, 8)", "(4, 8)"}));
  EXPECT_TRUE(fails(run("rope_backward", {T(GN_F32, {4, 8}), T(GN_F32, {8}), T(GN_F32, {3, 8})}), GN_ERR_SHAPE,
                    "rope_backward", {"sin of shape (3, 8)", "grad_y"}));
  EXPECT_TRUE(fails(run("rope", {T(GN_I32, {4, 8}), T(GN_F32, {8}), T(GN_F32, {8})}), GN_ERR_DTYPE, "rope", {"int32"}));
}

TEST(Swiglu, ForwardBackward) {
  Result r = run("swiglu", {T(GN_BF16, {2, 8}), T(GN_F32, {2, 8})});
  EXPECT_TRUE(has_out(r, 0, GN_F32, {2, 8}));
  EXPECT_EQ(r.in_dtypes[0], GN_F32);
  EXPECT_TRUE(fails(run("swiglu", {T(GN_F32, {2, 8}), T(GN_F32, {8})}), GN_ERR_SHAPE, "swiglu", {"(2, 8)", "(8)"}));
  EXPECT_TRUE(fails(run("swiglu", {T(GN_F32, {8}), T(GN_I32, {8})}), GN_ERR_DTYPE, "swiglu", {"up", "int32"}));
  r = run("swiglu_backward", {T(GN_F32, {3}), T(GN_BF16, {3}), T(GN_BF16, {3})});
  EXPECT_TRUE(has_out(r, 0, GN_BF16, {3}));
  EXPECT_TRUE(has_out(r, 1, GN_BF16, {3}));
  EXPECT_EQ(r.in_dtypes[0], GN_BF16);
  EXPECT_TRUE(fails(run("swiglu_backward", {T(GN_F32, {4}), T(GN_F32, {3}), T(GN_F32, {3})}), GN_ERR_SHAPE,
                    "swiglu_backward", {"grad (4)"}));
}

TEST(CrossEntropy, Forward) {
  Result r = run("cross_entropy", {T(GN_BF16, {4, 10}), T(GN_I64, {4})});
  EXPECT_TRUE(has_out(r, 0, GN_BF16, {}));
  EXPECT_TRUE(has_out(r, 1, GN_F32, {4}));
  EXPECT_EQ(r.kernel_dtype, GN_BF16);
  EXPECT_EQ(r.in_dtypes[1], GN_I64);
  r = run("cross_entropy", {T(GN_F64, {2, 3, 10}), T(GN_I32, {2, 3})}, {ai("reduction", 0)});
  EXPECT_TRUE(has_out(r, 0, GN_F64, {2, 3}));
  EXPECT_TRUE(has_out(r, 1, GN_F64, {2, 3}));
  EXPECT_TRUE(has_out(run("cross_entropy", {T(GN_F32, {10}), T(GN_I64, {})}), 1, GN_F32, {}));
  EXPECT_TRUE(fails(run("cross_entropy", {T(GN_F32, {4, 10}), T(GN_F32, {4})}), GN_ERR_DTYPE, "cross_entropy",
                    {"target", "float32"}));
  EXPECT_TRUE(fails(run("cross_entropy", {T(GN_F32, {4, 10}), T(GN_I64, {5})}), GN_ERR_SHAPE, "cross_entropy",
                    {"target shape (5)", "(4)"}));
  EXPECT_TRUE(fails(run("cross_entropy", {T(GN_F32, {4, 10}), T(GN_I64, {4})}, {ai("reduction", 3)}),
                    GN_ERR_INVALID_ARGUMENT, "cross_entropy", {"reduction", "3"}));
  EXPECT_TRUE(fails(run("cross_entropy", {T(GN_F32, {4, 10}), T(GN_I64, {4})}, {af("label_smoothing", 1.5)}),
                    GN_ERR_INVALID_ARGUMENT, "cross_entropy", {"label_smoothing", "1.5"}));
  EXPECT_TRUE(fails(run("cross_entropy", {T(GN_F32, {4, 10}), T(GN_I64, {4})}, {af("label_smoothing", NAN)}),
                    GN_ERR_INVALID_ARGUMENT, "cross_entropy", {"label_smoothing"}));
  EXPECT_TRUE(fails(run("cross_entropy", {T(GN_F32, {}), T(GN_I64, {})}), GN_ERR_SHAPE, "cross_entropy", {"()"}));
  EXPECT_TRUE(
      fails(run("cross_entropy", {T(GN_I32, {4, 10}), T(GN_I64, {4})}), GN_ERR_DTYPE, "cross_entropy", {"logits"}));
}

TEST(CrossEntropy, Backward) {
  Result r = run("cross_entropy_backward", {T(GN_F32, {}), T(GN_BF16, {4, 10}), T(GN_I64, {4}), T(GN_F32, {4})});
  EXPECT_TRUE(has_out(r, 0, GN_BF16, {4, 10}));
  EXPECT_EQ(r.kernel_dtype, GN_BF16);
  EXPECT_EQ(r.in_dtypes[0], GN_BF16);
  EXPECT_EQ(r.in_dtypes[3], GN_F32);
  EXPECT_TRUE(run("cross_entropy_backward", {T(GN_F32, {4}), T(GN_F32, {4, 10}), T(GN_I64, {4}), T(GN_F32, {4})},
                  {ai("reduction", 0)})
                  .ok());
  EXPECT_TRUE(fails(run("cross_entropy_backward", {T(GN_F32, {4}), T(GN_F32, {4, 10}), T(GN_I64, {4}), T(GN_F32, {4})}),
                    GN_ERR_SHAPE, "cross_entropy_backward", {"grad_loss shape (4)", "()"}));
  EXPECT_TRUE(fails(run("cross_entropy_backward", {T(GN_F32, {}), T(GN_F32, {4, 10}), T(GN_I64, {4}), T(GN_F32, {3})}),
                    GN_ERR_SHAPE, "cross_entropy_backward", {"lse shape (3)"}));
  EXPECT_TRUE(fails(run("cross_entropy_backward", {T(GN_I64, {}), T(GN_F32, {4, 10}), T(GN_I64, {4}), T(GN_F32, {4})}),
                    GN_ERR_DTYPE, "cross_entropy_backward", {"grad_loss", "int64"}));
}

TEST(Sdpa, GqaShapes) {
  Result r = run("scaled_dot_product_attention",
                 {T(GN_BF16, {2, 8, 5, 64}), T(GN_BF16, {2, 2, 7, 64}), T(GN_BF16, {2, 2, 7, 32})});
  EXPECT_TRUE(has_out(r, 0, GN_BF16, {2, 8, 5, 32}));
  EXPECT_TRUE(has_out(r, 1, GN_F32, {2, 8, 5}));
  EXPECT_EQ(r.kernel_dtype, GN_BF16);
  // Masks broadcast to (B, Hq, Sq, Sk) and are not cast.
  r = run("scaled_dot_product_attention",
          {T(GN_F16, {1, 4, 5, 16}), T(GN_F32, {1, 4, 7, 16}), T(GN_F16, {1, 4, 7, 16}), T(GN_BOOL, {5, 7})},
          {ai("causal", 2), af("scale", 0.5)});
  EXPECT_TRUE(has_out(r, 0, GN_F32, {1, 4, 5, 16}));
  EXPECT_EQ(r.in_dtypes[0], GN_F32);
  EXPECT_EQ(r.in_dtypes[2], GN_F32);
  EXPECT_EQ(r.in_dtypes[3], GN_BOOL);
  EXPECT_TRUE(has_out(run("scaled_dot_product_attention", {T(GN_F64, {1, 1, 2, 4}), T(GN_F64, {1, 1, 3, 4}),
                                                           T(GN_F64, {1, 1, 3, 4}), T(GN_F32, {1, 1, 1, 3})}),
                      1, GN_F64, {1, 1, 2}));
}

TEST(Sdpa, Errors) {
  const char* op = "scaled_dot_product_attention";
  const auto q = T(GN_F32, {2, 6, 5, 16}), k = T(GN_F32, {2, 3, 7, 16}), v = T(GN_F32, {2, 3, 7, 16});
  EXPECT_TRUE(fails(run(op, {T(GN_F32, {6, 5, 16}), k, v}), GN_ERR_SHAPE, op, {"4-D", "(6, 5, 16)"}));
  EXPECT_TRUE(fails(run(op, {q, T(GN_F32, {2, 4, 7, 16}), T(GN_F32, {2, 4, 7, 16})}), GN_ERR_SHAPE, op,
                    {"query heads 6", "heads 4"}));
  EXPECT_TRUE(fails(run(op, {q, k, T(GN_F32, {2, 3, 8, 16})}), GN_ERR_SHAPE, op, {"(2, 3, 8, 16)"}));
  EXPECT_TRUE(fails(run(op, {q, T(GN_F32, {2, 3, 7, 8}), v}), GN_ERR_SHAPE, op, {"head dims", "(2, 3, 7, 8)"}));
  EXPECT_TRUE(fails(run(op, {q, T(GN_F32, {1, 3, 7, 16}), v}), GN_ERR_SHAPE, op, {"batch"}));
  EXPECT_TRUE(fails(run(op, {q, k, v, T(GN_I32, {5, 7})}), GN_ERR_DTYPE, op, {"mask", "int32"}));
  EXPECT_TRUE(
      fails(run(op, {q, k, v, T(GN_BOOL, {5, 8})}), GN_ERR_SHAPE, op, {"mask of shape (5, 8)", "(2, 6, 5, 7)"}));
  EXPECT_TRUE(fails(run(op, {q, k, v, T(GN_BOOL, {1, 2, 6, 5, 7})}), GN_ERR_SHAPE, op, {"mask"}));
  EXPECT_TRUE(fails(run(op, {q, k, v}, {ai("causal", 3)}), GN_ERR_INVALID_ARGUMENT, op, {"causal", "3"}));
  EXPECT_TRUE(fails(run(op, {q, T(GN_I64, {2, 3, 7, 16}), v}), GN_ERR_DTYPE, op, {"k", "int64"}));
}

TEST(Sdpa, Backward) {
  const char* op = "scaled_dot_product_attention_backward";
  const auto q = T(GN_BF16, {2, 6, 5, 16}), k = T(GN_BF16, {2, 3, 7, 16}), v = T(GN_BF16, {2, 3, 7, 8});
  const auto out = T(GN_BF16, {2, 6, 5, 8}), lse = T(GN_F32, {2, 6, 5});
  Result r = run(op, {T(GN_F32, {2, 6, 5, 8}), q, k, v, out, lse, T(GN_BOOL, {5, 7})});
  EXPECT_TRUE(has_out(r, 0, GN_BF16, {2, 6, 5, 16}));
  EXPECT_TRUE(has_out(r, 1, GN_BF16, {2, 3, 7, 16}));
  EXPECT_TRUE(has_out(r, 2, GN_BF16, {2, 3, 7, 8}));
  EXPECT_EQ(r.in_dtypes[0], GN_BF16);  // grad_out cast to the q/k/v dtype
  EXPECT_EQ(r.in_dtypes[5], GN_F32);   // lse kept
  EXPECT_EQ(r.kernel_dtype, GN_BF16);
  EXPECT_TRUE(fails(run(op, {T(GN_BF16, {2, 6, 5, 16}), q, k, v, out, lse}), GN_ERR_SHAPE, op,
                    {"grad_out shape (2, 6, 5, 16)", "(2, 6, 5, 8)"}));
  EXPECT_TRUE(fails(run(op, {out, q, k, v, out, T(GN_F32, {2, 6})}), GN_ERR_SHAPE, op, {"lse shape (2, 6)"}));
  EXPECT_TRUE(fails(run(op, {out, q, k, v, out, T(GN_I32, {2, 6, 5})}), GN_ERR_DTYPE, op, {"lse", "int32"}));
  EXPECT_TRUE(
      fails(run(op, {out, q, k, v, T(GN_BF16, {2, 6, 5, 16}), lse}), GN_ERR_SHAPE, op, {"out shape (2, 6, 5, 16)"}));
}

}  // namespace
}  // namespace genesis::test

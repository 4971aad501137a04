// Type promotion (against tables generated with PyTorch), broadcasting and
// shape formatting: the shared rules of core/ops/infer_common.cpp.
#include "infer_test_util.h"

namespace genesis::test {
namespace {

constexpr int32_t F32 = GN_F32, F16 = GN_F16, BF16 = GN_BF16, F64 = GN_F64, I8 = GN_I8, U8 = GN_U8, I32 = GN_I32,
                  I64 = GN_I64, B = GN_BOOL;

// Generated with Debian python3-torch 1.13 (/usr/bin/python3), our dtype order
// D = [float32, float16, bfloat16, float64, int8, uint8, int32, int64, bool]
// and int16 written as I32 (we have no int16: u8 + i8 -> i32):
//   promote:          [[torch.promote_types(a, b) for b in D] for a in D]
//   dim x zero-d:     [[torch.result_type(torch.zeros(2, dtype=a), torch.zeros((), dtype=b))
//                       for b in D] for a in D]
//   zero-d x wrapped: [[torch.result_type(torch.zeros((), dtype=a), s) for s in (True, 3, 1.5)]
//                       for a in D]
//   dim x wrapped:    same with torch.zeros(2, dtype=a)
constexpr int32_t kPromote[9][9] = {
    {F32, F32, F32, F64, F32, F32, F32, F32, F32},       {F32, F16, F32, F64, F16, F16, F16, F16, F16},
    {F32, F32, BF16, F64, BF16, BF16, BF16, BF16, BF16}, {F64, F64, F64, F64, F64, F64, F64, F64, F64},
    {F32, F16, BF16, F64, I8, I32, I32, I64, I8},        {F32, F16, BF16, F64, I32, U8, I32, I64, U8},
    {F32, F16, BF16, F64, I32, I32, I32, I64, I32},      {F32, F16, BF16, F64, I64, I64, I64, I64, I64},
    {F32, F16, BF16, F64, I8, U8, I32, I64, B},
};
constexpr int32_t kDimVsZero[9][9] = {
    {F32, F32, F32, F32, F32, F32, F32, F32, F32},
    {F16, F16, F16, F16, F16, F16, F16, F16, F16},
    {BF16, BF16, BF16, BF16, BF16, BF16, BF16, BF16, BF16},
    {F64, F64, F64, F64, F64, F64, F64, F64, F64},
    {F32, F16, BF16, F64, I8, I8, I8, I8, I8},
    {F32, F16, BF16, F64, U8, U8, U8, U8, U8},
    {F32, F16, BF16, F64, I32, I32, I32, I32, I32},
    {F32, F16, BF16, F64, I64, I64, I64, I64, I64},
    {F32, F16, BF16, F64, I8, U8, I32, I64, B},
};
// Columns: python True, 3, 1.5; the same table for 0-d and dimensioned tensors.
constexpr int32_t kVsWrapped[9][3] = {
    {F32, F32, F32}, {F16, F16, F16}, {BF16, BF16, BF16}, {F64, F64, F64}, {I8, I8, F32},
    {U8, U8, F32},   {I32, I32, F32}, {I64, I64, F32},    {B, I64, F32},
};
// Python scalars as wrapped metas: the dtype is what a caller would pass
// (float64 for a Python float); only the category may matter.
const gn_tensor_meta kWrapped[3] = {S(B), S(I64), S(F64)};

int32_t rt(std::vector<gn_tensor_meta> ms) {
  std::vector<const gn_tensor_meta*> p;
  for (auto& m : ms) p.push_back(&m);
  return core::result_type(p.data(), p.size());
}

TEST(Promotion, PromoteTypesMatchesTorch) {
  for (int a = 0; a < 9; ++a)
    for (int b = 0; b < 9; ++b)
      EXPECT_EQ(core::promote_types(a, b), kPromote[a][b]) << gn_dtype_name(a) << " + " << gn_dtype_name(b);
  EXPECT_EQ(core::promote_types(-1, F32), -1);
  EXPECT_EQ(core::promote_types(F32, 9), -1);
}

TEST(Promotion, ResultTypeDimensionedVsZeroDim) {
  for (int a = 0; a < 9; ++a)
    for (int b = 0; b < 9; ++b) {
      EXPECT_EQ(rt({T(a, {2}), T(b, {})}), kDimVsZero[a][b]) << gn_dtype_name(a) << " vs 0-d " << gn_dtype_name(b);
      // Order does not matter.
      EXPECT_EQ(rt({T(b, {}), T(a, {2})}), kDimVsZero[a][b]);
      // Same priority: plain promotion.
      EXPECT_EQ(rt({T(a, {}), T(b, {})}), kPromote[a][b]);
      EXPECT_EQ(rt({T(a, {2, 1}), T(b, {3})}), kPromote[a][b]);
    }
}

TEST(Promotion, ResultTypeVsWrappedScalars) {
  for (int a = 0; a < 9; ++a)
    for (int s = 0; s < 3; ++s) {
      EXPECT_EQ(rt({T(a, {}), kWrapped[s]}), kVsWrapped[a][s]) << "0-d " << gn_dtype_name(a) << " vs scalar " << s;
      EXPECT_EQ(rt({kWrapped[s], T(a, {4, 2})}), kVsWrapped[a][s]) << gn_dtype_name(a) << " vs scalar " << s;
    }
}

TEST(Promotion, WrappedScalarsUseTheirCategoryDefault) {
  // A wrapped float contributes float32 whatever dtype it carries...
  EXPECT_EQ(rt({T(I32, {2}), S(F64)}), F32);
  EXPECT_EQ(rt({T(I32, {2}), S(F16)}), F32);
  // ... a wrapped int int64 ...
  EXPECT_EQ(rt({T(B, {2}), S(I8)}), I64);
  EXPECT_EQ(rt({T(B, {}), S(I32)}), I64);
  // ... and only when its category is higher.
  EXPECT_EQ(rt({T(F16, {2}), S(F64)}), F16);
  EXPECT_EQ(rt({T(U8, {2}), S(I64)}), U8);
  // Two scalars alone.
  EXPECT_EQ(rt({S(I64), S(F64)}), F32);
  EXPECT_EQ(rt({S(B), S(B)}), B);
}

TEST(Promotion, ResultTypeThreeClasses) {
  // torch's combine_categories(dim, combine_categories(zero, wrapped)):
  // the 0-d float64 outranks the wrapped float and beats the int tensor.
  EXPECT_EQ(rt({T(I32, {3}), T(F64, {}), S(F64)}), F64);
  // A 0-d int does not beat a dimensioned int, but a wrapped float does.
  EXPECT_EQ(rt({T(I8, {3}), T(I64, {}), S(F64)}), F32);
  // A 0-d float16 with a float wrapped scalar over a bool tensor: float16.
  EXPECT_EQ(rt({T(B, {3}), T(F16, {}), S(F64)}), F16);
  // Dimensioned u8 and i8 meet at int32 (no int16).
  EXPECT_EQ(rt({T(U8, {3}), T(I8, {3}), T(I64, {})}), I32);
}

TEST(Broadcast, Shapes) {
  gn_tensor_meta out{};
  ASSERT_TRUE(core::broadcast_shapes(T(F32, {2, 3}), T(F32, {3}), &out));
  EXPECT_EQ(core::shape_str(out), "(2, 3)");
  ASSERT_TRUE(core::broadcast_shapes(T(F32, {2, 1, 4}), T(F32, {3, 1}), &out));
  EXPECT_EQ(core::shape_str(out), "(2, 3, 4)");
  ASSERT_TRUE(core::broadcast_shapes(T(F32, {0}), T(F32, {1}), &out));
  EXPECT_EQ(core::shape_str(out), "(0)");
  ASSERT_TRUE(core::broadcast_shapes(T(F32, {}), T(F32, {}), &out));
  EXPECT_EQ(out.ndim, 0);
  EXPECT_FALSE(core::broadcast_shapes(T(F32, {2, 3}), T(F32, {4}), &out));
  EXPECT_FALSE(core::broadcast_shapes(T(F32, {0}), T(F32, {2}), &out));
  // out may alias an input.
  gn_tensor_meta a = T(F32, {5, 1});
  ASSERT_TRUE(core::broadcast_shapes(a, T(F32, {1, 7}), &a));
  EXPECT_EQ(core::shape_str(a), "(5, 7)");
}

TEST(Broadcast, ShapeStr) {
  EXPECT_EQ(core::shape_str(T(F32, {})), "()");
  EXPECT_EQ(core::shape_str(T(F32, {4})), "(4)");
  EXPECT_EQ(core::shape_str(T(F32, {2, 3})), "(2, 3)");
}

}  // namespace
}  // namespace genesis::test

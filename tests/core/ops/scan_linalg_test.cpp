// Inference of the cumulative ops, searchsorted, scatter_reduce and the factorizations
// (core/ops/infer_scan.cpp, infer_linalg.cpp): output shapes and dtypes, the casts asked for,
// and the error paths.
#include "infer_test_util.h"

namespace genesis::test {
namespace {

TEST(Cumulative, DtypesAndShapes) {
  for (const char* op : {"cumsum", "cumprod"}) {
    Result r = run(op, {T(GN_I32, {3, 4})}, {ai("dim", 1)});
    EXPECT_TRUE(has_out(r, 0, GN_I64, {3, 4}));  // integers accumulate in int64
    EXPECT_EQ(r.in_dtypes[0], GN_I64);
    EXPECT_TRUE(has_out(run(op, {T(GN_BOOL, {5})}, {ai("dim", 0)}), 0, GN_I64, {5}));
    EXPECT_TRUE(has_out(run(op, {T(GN_BF16, {5})}, {ai("dim", -1)}), 0, GN_BF16, {5}));
    r = run(op, {T(GN_F32, {2, 3})}, {ai("dim", 0), ai("dtype", GN_F64)});
    EXPECT_TRUE(has_out(r, 0, GN_F64, {2, 3}));
    EXPECT_EQ(r.in_dtypes[0], GN_F64);  // dtype casts x first
    EXPECT_TRUE(has_out(run(op, {T(GN_F32, {})}, {ai("dim", -1)}), 0, GN_F32, {}));
    EXPECT_TRUE(fails(run(op, {T(GN_F32, {2, 3})}, {ai("dim", 2)}), GN_ERR_INDEX, op, {"dim 2", "rank 2"}));
  }
  EXPECT_TRUE(has_out(run("logcumsumexp", {T(GN_F16, {4, 2})}, {ai("dim", 0)}), 0, GN_F16, {4, 2}));
  EXPECT_TRUE(fails(run("logcumsumexp", {T(GN_I64, {4})}, {ai("dim", 0)}), GN_ERR_DTYPE, "logcumsumexp", {"int64"}));
  EXPECT_TRUE(fails(run("logcumsumexp", {T(GN_F32, {4})}, {ai("dim", 0), ai("dtype", GN_I32)}), GN_ERR_DTYPE,
                    "logcumsumexp", {"int32"}));
  for (const char* op : {"cummax", "cummin"}) {
    Result r = run(op, {T(GN_BOOL, {2, 7})}, {ai("dim", -1)});
    EXPECT_TRUE(has_out(r, 0, GN_BOOL, {2, 7}));
    EXPECT_TRUE(has_out(r, 1, GN_I64, {2, 7}));
    EXPECT_TRUE(fails(run(op, {T(GN_F32, {2})}, {ai("dim", -2)}), GN_ERR_INDEX, op));
  }
}

TEST(Searchsorted, Shapes) {
  Result r = run("searchsorted", {T(GN_I64, {9}), T(GN_F32, {2, 3})});
  EXPECT_TRUE(has_out(r, 0, GN_I64, {2, 3}));
  EXPECT_EQ(r.in_dtypes[0], GN_F32);  // compared in the promoted dtype
  EXPECT_EQ(r.kernel_dtype, GN_F32);
  r = run("searchsorted", {T(GN_BF16, {2, 9}), T(GN_BF16, {2, 4})}, {ai("out_int32", 1)});
  EXPECT_TRUE(has_out(r, 0, GN_I32, {2, 4}));
  EXPECT_EQ(r.kernel_dtype, GN_F32);  // 16-bit floats through float32
  EXPECT_TRUE(has_out(run("searchsorted", {T(GN_F64, {5}), T(GN_F64, {})}), 0, GN_I64, {}));
  EXPECT_TRUE(fails(run("searchsorted", {T(GN_F32, {2, 9}), T(GN_F32, {3, 4})}), GN_ERR_SHAPE, "searchsorted",
                    {"boundaries tensor (2, 9)", "input value tensor (3, 4)"}));
  EXPECT_TRUE(fails(run("searchsorted", {T(GN_F32, {}), T(GN_F32, {3})}), GN_ERR_SHAPE, "searchsorted", {"0-d"}));
  EXPECT_TRUE(fails(run("searchsorted", {T(GN_BOOL, {3}), T(GN_BOOL, {3})}), GN_ERR_DTYPE, "searchsorted", {"bool"}));
}

TEST(ScatterReduce, Shapes) {
  Result r =
      run("scatter_reduce", {T(GN_F32, {4, 5}), T(GN_I64, {2, 5}), T(GN_F64, {3, 5})}, {ai("dim", 0), ai("reduce", 2)});
  EXPECT_TRUE(has_out(r, 0, GN_F32, {4, 5}));
  EXPECT_EQ(r.in_dtypes[2], GN_F32);  // src cast to x
  EXPECT_TRUE(fails(
      run("scatter_reduce", {T(GN_F32, {2, 3}), T(GN_I64, {3, 3}), T(GN_F32, {3, 3})}, {ai("dim", 1), ai("reduce", 0)}),
      GN_ERR_SHAPE, "scatter_reduce", {"index (3, 3)"}));
}

TEST(Factorizations, Shapes) {
  Result r = run("lu_factor", {T(GN_F64, {2, 5, 3})});
  EXPECT_TRUE(has_out(r, 0, GN_F64, {2, 5, 3}));
  EXPECT_TRUE(has_out(r, 1, GN_I32, {2, 3}));
  EXPECT_TRUE(has_out(r, 2, GN_I32, {2}));
  r = run("lu_solve", {T(GN_F32, {2, 4, 4}), T(GN_I32, {2, 4}), T(GN_F64, {2, 4, 3})});
  EXPECT_TRUE(has_out(r, 0, GN_F32, {2, 4, 3}));
  EXPECT_EQ(r.in_dtypes[2], GN_F32);
  EXPECT_TRUE(
      has_out(run("solve_triangular", {T(GN_F32, {3, 3}), T(GN_F64, {3, 2})}, {ai("upper", 1)}), 0, GN_F64, {3, 2}));
  r = run("cholesky", {T(GN_F32, {3, 4, 4})});
  EXPECT_TRUE(has_out(r, 0, GN_F32, {3, 4, 4}));
  EXPECT_TRUE(has_out(r, 1, GN_I32, {3}));
  r = run("qr", {T(GN_F64, {5, 3})});
  EXPECT_TRUE(has_out(r, 0, GN_F64, {5, 3}));
  EXPECT_TRUE(has_out(r, 1, GN_F64, {3, 3}));
  r = run("qr", {T(GN_F64, {5, 3})}, {ai("mode", 1)});
  EXPECT_TRUE(has_out(r, 0, GN_F64, {5, 5}));
  EXPECT_TRUE(has_out(r, 1, GN_F64, {5, 3}));
  r = run("svd", {T(GN_F32, {2, 3, 6})});
  EXPECT_TRUE(has_out(r, 0, GN_F32, {2, 3, 3}));
  EXPECT_TRUE(has_out(r, 1, GN_F32, {2, 3}));
  EXPECT_TRUE(has_out(r, 2, GN_F32, {2, 3, 6}));
  r = run("svd", {T(GN_F32, {3, 6})}, {ai("full_matrices", 1)});
  EXPECT_TRUE(has_out(r, 0, GN_F32, {3, 3}));
  EXPECT_TRUE(has_out(r, 2, GN_F32, {6, 6}));
  r = run("svd", {T(GN_F32, {3, 6})}, {ai("compute_uv", 0)});
  EXPECT_TRUE(has_out(r, 0, GN_F32, {0}));
  EXPECT_TRUE(has_out(r, 1, GN_F32, {3}));
  r = run("eigh", {T(GN_F64, {4, 4})});
  EXPECT_TRUE(has_out(r, 0, GN_F64, {4}));
  EXPECT_TRUE(has_out(r, 1, GN_F64, {4, 4}));
}

TEST(Factorizations, Errors) {
  EXPECT_TRUE(fails(run("cholesky", {T(GN_F32, {3, 4})}), GN_ERR_SHAPE, "cholesky", {"square", "3 by 4"}));
  EXPECT_TRUE(fails(run("eigh", {T(GN_F32, {4})}), GN_ERR_SHAPE, "eigh", {"at least 2 dimensions"}));
  EXPECT_TRUE(fails(run("lu_factor", {T(GN_I64, {3, 3})}), GN_ERR_DTYPE, "lu_factor", {"floating-point", "int64"}));
  EXPECT_TRUE(fails(run("qr", {T(GN_F16, {3, 3})}), GN_ERR_DTYPE, "qr", {"low precision"}));
  EXPECT_TRUE(fails(run("qr", {T(GN_F32, {3, 3})}, {ai("mode", 2)}), GN_ERR_INVALID_ARGUMENT, "qr", {"mode"}));
  EXPECT_TRUE(fails(run("lu_solve", {T(GN_F32, {4, 4}), T(GN_I64, {4}), T(GN_F32, {4, 1})}), GN_ERR_DTYPE, "lu_solve",
                    {"pivots", "int32"}));
  EXPECT_TRUE(fails(run("lu_solve", {T(GN_F32, {4, 4}), T(GN_I32, {4}), T(GN_F32, {3, 1})}), GN_ERR_SHAPE, "lu_solve",
                    {"4x4 and 3x1"}));
  EXPECT_TRUE(fails(run("lu_solve", {T(GN_F32, {2, 4, 4}), T(GN_I32, {2, 4}), T(GN_F32, {3, 4, 1})}), GN_ERR_SHAPE,
                    "lu_solve", {"batch dims"}));
  EXPECT_TRUE(fails(run("solve_triangular", {T(GN_F32, {3, 3}), T(GN_F32, {2, 2})}, {ai("upper", 0)}), GN_ERR_SHAPE,
                    "solve_triangular", {"3x3 and 2x2"}));
}

}  // namespace
}  // namespace genesis::test

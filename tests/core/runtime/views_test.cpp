// Zero-copy views: each shares storage and reads the right elements.
#include "util.h"

using namespace gt;

namespace {

struct Views : ::testing::Test {
  Runtime r;
  // 0..23 as (2, 3, 4)
  T base() {
    std::vector<float> v(24);
    for (int i = 0; i < 24; ++i) v[i] = (float)i;
    return make<float>(r.rt, r.cpu, v, {2, 3, 4}, GN_F32);
  }
};

TEST_F(Views, PermuteReadsTransposedElements) {
  T a = base();
  int64_t dims[3] = {2, 0, 1};
  gn_tensor* p = nullptr;
  GN_OK_OR_FAIL(gn_tensor_permute(a.t, dims, 3, &p));
  T v(p);
  EXPECT_EQ(v.shape(), (std::vector<int64_t>{4, 2, 3}));
  EXPECT_TRUE(gn_tensor_shares_storage(a.t, v.t));
  auto got = values<float>(v);
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) EXPECT_EQ(got[(k * 2 + i) * 3 + j], (float)(i * 12 + j * 4 + k));
}

TEST_F(Views, SliceWithStepAndNegativeBounds) {
  T a = base();
  gn_tensor* s = nullptr;
  GN_OK_OR_FAIL(gn_tensor_slice(a.t, -1, 1, 100, 2, &s));  // last dim: 1, 3
  T v(s);
  EXPECT_EQ(v.shape(), (std::vector<int64_t>{2, 3, 2}));
  auto got = values<float>(v);
  EXPECT_EQ(got[0], 1);
  EXPECT_EQ(got[1], 3);
  EXPECT_EQ(got[11], 23);
  gn_tensor* s2 = nullptr;
  GN_OK_OR_FAIL(gn_tensor_slice(a.t, 1, -2, 3, 1, &s2));  // rows 1..2
  T v2(s2);
  EXPECT_EQ(v2.shape(), (std::vector<int64_t>{2, 2, 4}));
  EXPECT_EQ(values<float>(v2)[0], 4);
  gn_tensor* e = nullptr;
  GN_OK_OR_FAIL(gn_tensor_slice(a.t, 1, 2, 1, 1, &e));  // empty
  T ve(e);
  EXPECT_EQ(gn_tensor_numel(ve.t), 0);
}

TEST_F(Views, SelectExpandSqueezeUnsqueeze) {
  T a = base();
  gn_tensor* s = nullptr;
  GN_OK_OR_FAIL(gn_tensor_select(a.t, 1, -1, &s));  // (2, 4): rows j=2
  T sel(s);
  EXPECT_EQ(values<float>(sel), (std::vector<float>{8, 9, 10, 11, 20, 21, 22, 23}));
  T one = make<float>(r.rt, r.cpu, {1, 2, 3}, {3, 1}, GN_F32);
  int64_t shape[3] = {2, 3, 2};
  gn_tensor* x = nullptr;
  GN_OK_OR_FAIL(gn_tensor_expand(one.t, shape, 3, &x));
  T ex(x);
  EXPECT_EQ(gn_tensor_strides(ex.t)[0], 0);
  EXPECT_EQ(values<float>(ex), (std::vector<float>{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));
  gn_tensor* q = nullptr;
  GN_OK_OR_FAIL(gn_tensor_squeeze(one.t, GN_DIM_NONE, &q));
  T sq(q);
  EXPECT_EQ(sq.shape(), (std::vector<int64_t>{3}));
  gn_tensor* u = nullptr;
  GN_OK_OR_FAIL(gn_tensor_unsqueeze(sq.t, 0, &u));
  T un(u);
  EXPECT_EQ(un.shape(), (std::vector<int64_t>{1, 3}));
  int64_t bad[2] = {4, 2};
  gn_tensor* b = nullptr;
  Err e = take(gn_tensor_expand(one.t, bad, 2, &b));
  EXPECT_EQ(e.code, GN_ERR_SHAPE);
}

TEST_F(Views, ViewReshapeAndAsStrided) {
  T a = base();
  int64_t shape[2] = {6, -1};
  gn_tensor* v = nullptr;
  GN_OK_OR_FAIL(gn_tensor_view_as(a.t, shape, 2, &v));
  T vv(v);
  EXPECT_EQ(vv.shape(), (std::vector<int64_t>{6, 4}));
  EXPECT_TRUE(gn_tensor_shares_storage(a.t, vv.t));
  // A transposed tensor cannot be viewed flat; reshape copies instead.
  gn_tensor* tr = nullptr;
  GN_OK_OR_FAIL(gn_tensor_transpose(a.t, 0, 2, &tr));
  T t(tr);
  int64_t flat[1] = {24};
  gn_tensor* bad = nullptr;
  Err e = take(gn_tensor_view_as(t.t, flat, 1, &bad));
  EXPECT_EQ(e.code, GN_ERR_SHAPE);
  EXPECT_NE(e.msg.find("reshape"), std::string::npos);
  gn_tensor* rs = nullptr;
  GN_OK_OR_FAIL(gn_tensor_reshape(t.t, flat, 1, &rs));
  T r2(rs);
  EXPECT_FALSE(gn_tensor_shares_storage(a.t, r2.t));
  EXPECT_EQ(values<float>(r2)[1], 12);  // element (k=0, j=0, i=1)
  // as_strided: diagonal of the first (3, 4) plane
  int64_t s[1] = {3}, st[1] = {5};
  gn_tensor* d = nullptr;
  GN_OK_OR_FAIL(gn_tensor_as_strided(a.t, s, st, 1, 0, &d));
  T diag(d);
  EXPECT_EQ(values<float>(diag), (std::vector<float>{0, 5, 10}));
  int64_t s_big[1] = {30}, st1[1] = {1};
  gn_tensor* oob = nullptr;
  e = take(gn_tensor_as_strided(a.t, s_big, st1, 1, 0, &oob));
  EXPECT_EQ(e.code, GN_ERR_INDEX);
  gn_tensor* f = nullptr;
  GN_OK_OR_FAIL(gn_tensor_flatten(a.t, 1, 2, &f));
  T fl(f);
  EXPECT_EQ(fl.shape(), (std::vector<int64_t>{2, 12}));
}

TEST_F(Views, WritesThroughAViewReachTheBase) {
  T a = base();
  gn_tensor* s = nullptr;
  GN_OK_OR_FAIL(gn_tensor_select(a.t, 0, 1, &s));
  T v(s);
  const gn_op* fill = nullptr;
  GN_OK_OR_FAIL(gn_op_find(r.rt, "fill", &fill));
  gn_attr_value val = gn_attr_float(-1);
  GN_OK_OR_FAIL(gn_op_call(r.rt, fill, &v.t, 1, &val, 1, nullptr, 0));
  auto got = values<float>(a);
  EXPECT_EQ(got[11], 11);
  EXPECT_EQ(got[12], -1);
  EXPECT_EQ(got[23], -1);
}

}  // namespace

namespace {

// gn_tensor_is_exclusive: only when no other handle or view reaches the data.
TEST_F(Views, ExclusiveOnlyWithoutOtherReferences) {
  T a = base();
  EXPECT_EQ(gn_tensor_is_exclusive(a.t), 1);
  gn_tensor_retain(a.t);  // a second reference to the handle
  EXPECT_EQ(gn_tensor_is_exclusive(a.t), 0);
  gn_tensor_release(a.t);
  EXPECT_EQ(gn_tensor_is_exclusive(a.t), 1);
  {
    gn_tensor* tr = nullptr;
    GN_OK_OR_FAIL(gn_tensor_transpose(a.t, 0, 1, &tr));
    T view(tr);  // a view shares the storage: neither is exclusive
    EXPECT_EQ(gn_tensor_is_exclusive(a.t), 0);
    EXPECT_EQ(gn_tensor_is_exclusive(view.t), 0);
  }
  EXPECT_EQ(gn_tensor_is_exclusive(a.t), 1);
  EXPECT_EQ(gn_tensor_is_exclusive(nullptr), 0);
}

}  // namespace

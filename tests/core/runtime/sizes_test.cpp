// Shapes whose element count, byte size or strides overflow int64 are refused
// with a status naming the shape wherever a shape enters the core: creation,
// op outputs, views, DLPack import.  Also slice steps and device indices at
// the edges of their integer types.
#include <cstdint>
#include <limits>

#include "genesis/dlpack.h"
#include "util.h"

using namespace gt;

namespace {

constexpr int64_t k62 = int64_t{1} << 62;
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// The status must be an argument/shape/memory error mentioning `needle`.
void expect_refused(gn_status* st, const std::string& needle) {
  ASSERT_NE(st, nullptr) << "accepted; expected an error mentioning " << needle;
  Err e = take(st);
  EXPECT_TRUE(e.code == GN_ERR_INVALID_ARGUMENT || e.code == GN_ERR_OUT_OF_MEMORY || e.code == GN_ERR_SHAPE)
      << e.code << ": " << e.msg;
  EXPECT_NE(e.msg.find(needle), std::string::npos) << e.msg;
}

TEST(Sizes, EmptyWithOverflowingShapeIsRefused) {
  Runtime r;
  for (std::vector<int64_t> shape : {std::vector<int64_t>{k62}, {4, k62}, {k62, 4}, {kMax, 2}, {k62, k62, 0}}) {
    gn_tensor* t = nullptr;
    expect_refused(gn_tensor_empty(r.rt, shape.data(), (int32_t)shape.size(), GN_F32, r.cpu, &t),
                   std::string("(").append(std::to_string(shape[0])));
    EXPECT_EQ(t, nullptr);
  }
  // Large zero-size and valid shapes still work.
  int64_t zero[2] = {k62 / 8, 0};
  gn_tensor* t = nullptr;
  GN_OK_OR_FAIL(gn_tensor_empty(r.rt, zero, 2, GN_F32, r.cpu, &t));
  EXPECT_EQ(gn_tensor_numel(t), 0);
  gn_tensor_release(t);
}

TEST(Sizes, FromHostWithHugeShapeDoesNotReadTheSmallBuffer) {
  Runtime r;
  float four_bytes = 1;
  for (int64_t n : {k62, k62 / 2, kMax}) {
    gn_tensor* t = nullptr;
    gn_status* st = gn_tensor_from_host(r.rt, &four_bytes, &n, 1, GN_F32, r.cpu, &t);
    ASSERT_NE(st, nullptr) << n;
    Err e = take(st);
    EXPECT_TRUE(e.code == GN_ERR_INVALID_ARGUMENT || e.code == GN_ERR_OUT_OF_MEMORY) << e.msg;
    EXPECT_EQ(t, nullptr);
  }
}

TEST(Sizes, CreationOpsWithOverflowingShapeAreRefused) {
  Runtime r;
  for (const char* op : {"full", "randn", "rand"}) {
    SCOPED_TRACE(op);
    for (std::vector<int64_t> shape : {std::vector<int64_t>{k62}, {4, k62}}) {
      T out;
      std::vector<gn_attr_value> attrs{gn_attr_ints(shape.data(), shape.size())};
      if (std::string(op) == "full") attrs.push_back(gn_attr_float(1));
      expect_refused(call1(r.rt, op, {}, attrs, &out), std::to_string(k62));
      EXPECT_EQ(out.t, nullptr);
    }
  }
  T out;
  expect_refused(call1(r.rt, "arange", {}, {gn_attr_float(0), gn_attr_float(4e18), gn_attr_float(1)}, &out), "arange");
}

TEST(Sizes, ViewOfEmptyTensorAsHugeShapeIsRefused) {
  Runtime r;
  int64_t zero = 0;
  gn_tensor* e = nullptr;
  GN_OK_OR_FAIL(gn_tensor_empty(r.rt, &zero, 1, GN_F32, r.cpu, &e));
  T empty(e);
  int64_t huge[2] = {k62, 4};
  gn_tensor* v = nullptr;
  expect_refused(gn_tensor_view_as(empty.t, huge, 2, &v), std::to_string(k62));
  expect_refused(gn_tensor_reshape(empty.t, huge, 2, &v), std::to_string(k62));
  EXPECT_EQ(v, nullptr);
  int64_t fine[3] = {k62, 4, 0};
  expect_refused(gn_tensor_view_as(empty.t, fine, 3, &v), std::to_string(k62));
  int64_t ok[2] = {3, 0};
  GN_OK_OR_FAIL(gn_tensor_view_as(empty.t, ok, 2, &v));
  gn_tensor_release(v);
}

TEST(Sizes, ExpandToOverflowingShapeIsRefused) {
  Runtime r;
  T one = make<float>(r.rt, r.cpu, std::vector<float>{1}, {1, 1}, GN_F32);
  int64_t huge[2] = {k62, 4};
  gn_tensor* v = nullptr;
  expect_refused(gn_tensor_expand(one.t, huge, 2, &v), std::to_string(k62));
  EXPECT_EQ(v, nullptr);
}

TEST(Sizes, AsStridedWithOverflowingStridesIsRefused) {
  Runtime r;
  T a = make<float>(r.rt, r.cpu, std::vector<float>(8, 1), {8}, GN_F32);
  gn_tensor* v = nullptr;
  {  // (shape - 1) * stride overflows and wraps to a small "last element"
    int64_t shape[2] = {2, 3};
    int64_t strides[2] = {kMax, kMax};
    expect_refused(gn_tensor_as_strided(a.t, shape, strides, 2, 0, &v), "overflows");
  }
  {  // each term fits, the sum does not
    int64_t shape[2] = {2, 2};
    int64_t strides[2] = {kMax - 1, kMax - 1};
    expect_refused(gn_tensor_as_strided(a.t, shape, strides, 2, 5, &v), "overflows");
  }
  {  // the element count itself overflows (stride 0 keeps every element in bounds)
    int64_t shape[2] = {k62, 4};
    int64_t strides[2] = {0, 0};
    expect_refused(gn_tensor_as_strided(a.t, shape, strides, 2, 0, &v), std::to_string(k62));
  }
  EXPECT_EQ(v, nullptr);
  int64_t shape[2] = {2, 4};
  int64_t strides[2] = {4, 1};
  GN_OK_OR_FAIL(gn_tensor_as_strided(a.t, shape, strides, 2, 0, &v));
  gn_tensor_release(v);
}

TEST(Sizes, SliceWithHugeStepKeepsOneElement) {
  Runtime r;
  T a = make<float>(r.rt, r.cpu, std::vector<float>{5, 6, 7}, {3}, GN_F32);
  for (int64_t step : {kMax, kMax - 1, int64_t{3}, int64_t{4}}) {
    gn_tensor* v = nullptr;
    GN_OK_OR_FAIL(gn_tensor_slice(a.t, 0, 0, kMax, step, &v));
    T s(v);
    EXPECT_EQ(s.shape(), std::vector<int64_t>{1}) << step;
    EXPECT_EQ(values<float>(s), std::vector<float>{5}) << step;
  }
  gn_tensor* v = nullptr;  // from index 1: one element, the 6
  GN_OK_OR_FAIL(gn_tensor_slice(a.t, 0, 1, 3, kMax, &v));
  T s(v);
  EXPECT_EQ(values<float>(s), std::vector<float>{6});
  T one = make<float>(r.rt, r.cpu, std::vector<float>{9}, {1}, GN_F32);
  GN_OK_OR_FAIL(gn_tensor_slice(one.t, 0, 0, 1, kMax, &v));
  T s1(v);
  EXPECT_EQ(values<float>(s1), std::vector<float>{9});
}

TEST(Sizes, DeviceIndexBeyondInt32IsAnError) {
  Runtime r;
  for (const char* spec : {"cpu:4294967296", "cpu:2147483648", "cpu:99999999999999999999999", "cpu:-1"}) {
    gn_device d{-7, -7};
    gn_status* st = gn_device_parse(r.rt, spec, &d);
    ASSERT_NE(st, nullptr) << spec << " parsed as " << d.type << ":" << d.index;
    Err e = take(st);
    EXPECT_EQ(e.code, GN_ERR_INVALID_ARGUMENT) << spec << ": " << e.msg;
    EXPECT_NE(e.msg.find(spec), std::string::npos) << e.msg;
  }
}

// A DLPack tensor over `data` with the given shape; counts deleter calls.
struct DlSource {
  static int deleted;
  DLManagedTensorVersioned m{};
  std::vector<int64_t> shape;
  explicit DlSource(std::vector<int64_t> s, void* data) : shape(std::move(s)) {
    m.version = {DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION};
    m.deleter = [](DLManagedTensorVersioned*) { ++deleted; };
    m.dl_tensor.data = data;
    m.dl_tensor.device = {kDLCPU, 0};
    m.dl_tensor.ndim = (int32_t)shape.size();
    m.dl_tensor.dtype = {kDLFloat, 32, 1};
    m.dl_tensor.shape = shape.data();
  }
};
int DlSource::deleted = 0;

TEST(Sizes, DlpackWithNegativeOrOverflowingShapeIsRefused) {
  Runtime r;
  float data[4] = {};
  for (std::vector<int64_t> shape : {std::vector<int64_t>{-5}, {2, -5}, {k62, 4}}) {
    DlSource src(shape, data);
    DlSource::deleted = 0;
    gn_tensor* t = nullptr;
    gn_status* st = gn_tensor_from_dlpack(r.rt, &src.m, &t);
    ASSERT_NE(st, nullptr) << shape.back();
    Err e = take(st);
    EXPECT_NE(e.msg.find(std::to_string(shape.back())), std::string::npos) << e.msg;
    EXPECT_EQ(t, nullptr);
    EXPECT_EQ(DlSource::deleted, 1);  // ownership was taken either way
  }
  {  // a NULL shape with ndim > 0
    DlSource src({2}, data);
    src.m.dl_tensor.shape = nullptr;
    DlSource::deleted = 0;
    gn_tensor* t = nullptr;
    Err e = take(gn_tensor_from_dlpack(r.rt, &src.m, &t));
    EXPECT_EQ(e.code, GN_ERR_INVALID_ARGUMENT) << e.msg;
    EXPECT_NE(e.msg.find("shape is NULL"), std::string::npos) << e.msg;
    EXPECT_EQ(DlSource::deleted, 1);
  }
  DlSource good({2, 2}, data);
  gn_tensor* t = nullptr;
  GN_OK_OR_FAIL(gn_tensor_from_dlpack(r.rt, &good.m, &t));
  EXPECT_EQ(gn_tensor_numel(t), 4);
  gn_tensor_release(t);
}

}  // namespace

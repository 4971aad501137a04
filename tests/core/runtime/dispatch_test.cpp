// Dispatcher behaviour through the C API: broadcasting, promotion, outputs,
// attribute handling and every error path naming the op.
#include "util.h"

using namespace gt;

namespace {

TEST(Dispatch, BroadcastAddMatchesHandComputed) {
  Runtime r;
  T a = make<float>(r.rt, r.cpu, {1, 2, 3, 4, 5, 6}, {2, 3}, GN_F32);
  T b = make<float>(r.rt, r.cpu, {10, 20, 30}, {3}, GN_F32);
  T c;
  GN_OK_OR_FAIL(call1(r.rt, "add", {a.t, b.t}, {gn_attr_float(2.0)}, &c));
  EXPECT_EQ(c.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values<float>(c), (std::vector<float>{21, 42, 63, 24, 45, 66}));
}

TEST(Dispatch, TypePromotionIntPlusFloatScalarAndTensor) {
  Runtime r;
  T i = make<int64_t>(r.rt, r.cpu, {1, 2, 3}, {3}, GN_I64);
  // A wrapped float scalar lifts int64 to the default float dtype (float32).
  gn_tensor* s = nullptr;
  GN_OK_OR_FAIL(gn_tensor_scalar(r.rt, 0.5, GN_F64, r.cpu, &s));
  T sc(s);
  T c;
  GN_OK_OR_FAIL(call1(r.rt, "add", {i.t, sc.t}, {}, &c));
  EXPECT_EQ(gn_tensor_dtype(c.t), GN_F32);
  EXPECT_EQ(values<float>(c), (std::vector<float>{1.5f, 2.5f, 3.5f}));
  // A wrapped int scalar does not widen float16.
  T h = make<uint16_t>(r.rt, r.cpu, {0x3c00, 0x4000}, {2}, GN_F16);  // 1, 2
  gn_tensor* k = nullptr;
  GN_OK_OR_FAIL(gn_tensor_scalar(r.rt, 3, GN_I64, r.cpu, &k));
  T kk(k);
  T d;
  GN_OK_OR_FAIL(call1(r.rt, "mul", {h.t, kk.t}, {}, &d));
  EXPECT_EQ(gn_tensor_dtype(d.t), GN_F16);
  EXPECT_EQ(values<uint16_t>(d), (std::vector<uint16_t>{0x4200, 0x4600}));  // 3, 6
  // Two dimensioned tensors: int32 + float64 -> float64.
  T x = make<int32_t>(r.rt, r.cpu, {1, 2}, {2}, GN_I32);
  T y = make<double>(r.rt, r.cpu, {0.25, 0.5}, {2}, GN_F64);
  T z;
  GN_OK_OR_FAIL(call1(r.rt, "add", {x.t, y.t}, {}, &z));
  EXPECT_EQ(gn_tensor_dtype(z.t), GN_F64);
  EXPECT_EQ(values<double>(z), (std::vector<double>{1.25, 2.5}));
}

TEST(Dispatch, NonContiguousInputsAreRead) {
  Runtime r;
  T a = make<float>(r.rt, r.cpu, {1, 2, 3, 4, 5, 6}, {2, 3}, GN_F32);
  gn_tensor* at = nullptr;
  GN_OK_OR_FAIL(gn_tensor_transpose(a.t, 0, 1, &at));
  T a_t(at);  // (3, 2): [[1,4],[2,5],[3,6]]
  EXPECT_FALSE(gn_tensor_is_contiguous(a_t.t));
  T c;
  GN_OK_OR_FAIL(call1(r.rt, "mul", {a_t.t, a_t.t}, {}, &c));
  EXPECT_EQ(values<float>(c), (std::vector<float>{1, 16, 4, 25, 9, 36}));
}

TEST(Dispatch, PreallocatedOutputIsWrittenInPlace) {
  Runtime r;
  T a = make<float>(r.rt, r.cpu, {1, 2}, {2}, GN_F32);
  T out = make<float>(r.rt, r.cpu, {0, 0}, {2}, GN_F32);
  const gn_op* add = nullptr;
  GN_OK_OR_FAIL(gn_op_find(r.rt, "add", &add));
  gn_tensor* in[2] = {a.t, a.t};
  gn_tensor* o[1] = {out.t};
  GN_OK_OR_FAIL(gn_op_call(r.rt, add, in, 2, nullptr, 0, o, 1));
  EXPECT_EQ(o[0], out.t);
  EXPECT_EQ(values<float>(out), (std::vector<float>{2, 4}));
  // Wrong output shape: an error naming the op, output untouched.
  T bad = make<float>(r.rt, r.cpu, {7, 7, 7}, {3}, GN_F32);
  gn_tensor* ob[1] = {bad.t};
  Err e = take(gn_op_call(r.rt, add, in, 2, nullptr, 0, ob, 1));
  EXPECT_EQ(e.code, GN_ERR_SHAPE);
  EXPECT_NE(e.msg.find("[add]"), std::string::npos) << e.msg;
  EXPECT_EQ(values<float>(bad), (std::vector<float>{7, 7, 7}));
}

TEST(Dispatch, CopyIntoBroadcastsAndConverts) {
  Runtime r;
  T src = make<float>(r.rt, r.cpu, {1.5f, -2.5f}, {2}, GN_F32);
  T dst = make<int64_t>(r.rt, r.cpu, {0, 0, 0, 0}, {2, 2}, GN_I64);
  GN_OK_OR_FAIL(gn_tensor_copy_(dst.t, src.t));
  EXPECT_EQ(values<int64_t>(dst), (std::vector<int64_t>{1, -2, 1, -2}));
}

TEST(Dispatch, ErrorsNameTheOpAndTheProblem) {
  Runtime r;
  T a = make<float>(r.rt, r.cpu, {1, 2, 3, 4, 5, 6}, {2, 3}, GN_F32);
  T b = make<float>(r.rt, r.cpu, {1, 2, 3, 4}, {4}, GN_F32);
  T c;
  // shape mismatch
  Err e = take(call1(r.rt, "add", {a.t, b.t}, {}, &c));
  EXPECT_EQ(e.code, GN_ERR_SHAPE);
  EXPECT_NE(e.msg.find("[add]"), std::string::npos) << e.msg;
  EXPECT_NE(e.msg.find("(2, 3)"), std::string::npos) << e.msg;
  // unknown op
  const gn_op* op = nullptr;
  e = take(gn_op_find(r.rt, "no_such_op", &op));
  EXPECT_EQ(e.code, GN_ERR_NOT_FOUND);
  EXPECT_NE(e.msg.find("no_such_op"), std::string::npos);
  // wrong arity
  e = take(call1(r.rt, "add", {a.t}, {}, &c));
  EXPECT_EQ(e.code, GN_ERR_INVALID_ARGUMENT);
  EXPECT_NE(e.msg.find("[add] expects 2 input(s), got 1"), std::string::npos) << e.msg;
  // bad attribute kind
  e = take(call1(r.rt, "add", {a.t, a.t}, {gn_attr_string("x")}, &c));
  EXPECT_EQ(e.code, GN_ERR_INVALID_ARGUMENT);
  EXPECT_NE(e.msg.find("[add] attribute 'alpha' expects float"), std::string::npos) << e.msg;
  // too many attributes
  e = take(call1(r.rt, "add", {a.t, a.t}, {gn_attr_float(1), gn_attr_float(2)}, &c));
  EXPECT_NE(e.msg.find("[add] takes 1 attribute(s), got 2"), std::string::npos) << e.msg;
  // missing required attribute
  e = take(call1(r.rt, "cast", {a.t}, {}, &c));
  EXPECT_NE(e.msg.find("[cast] missing required attribute 'dtype'"), std::string::npos) << e.msg;
  // dtype not allowed
  T bools = make<uint8_t>(r.rt, r.cpu, {1, 0}, {2}, GN_BOOL);
  e = take(call1(r.rt, "neg", {bools.t}, {}, &c));
  EXPECT_EQ(e.code, GN_ERR_DTYPE);
  EXPECT_NE(e.msg.find("[neg]"), std::string::npos) << e.msg;
  // bad device
  gn_device bogus{r.cpu.type, 3};
  gn_tensor* t = nullptr;
  int64_t one = 1;
  e = take(gn_tensor_empty(r.rt, &one, 1, GN_F32, bogus, &t));
  EXPECT_EQ(e.code, GN_ERR_DEVICE);
  EXPECT_NE(e.msg.find("cpu:3"), std::string::npos) << e.msg;
  // index out of range reported by the kernel, prefixed with the op
  T ids = make<int64_t>(r.rt, r.cpu, {0, 5}, {2}, GN_I64);
  T w = make<float>(r.rt, r.cpu, {1, 2, 3, 4}, {2, 2}, GN_F32);
  e = take(call1(r.rt, "embedding", {w.t, ids.t}, {}, &c));
  EXPECT_EQ(e.code, GN_ERR_INDEX);
  EXPECT_NE(e.msg.find("[embedding]"), std::string::npos) << e.msg;
}

TEST(Dispatch, NoKernelForDtypeSaysWhatExists) {
  Runtime r;
  // embedding_backward has no integer kernels: ask with an int64 grad.
  T g = make<int64_t>(r.rt, r.cpu, {1, 2}, {1, 2}, GN_I64);
  T ids = make<int64_t>(r.rt, r.cpu, {0}, {1}, GN_I64);
  T c;
  Err e = take(call1(r.rt, "embedding_backward", {g.t, ids.t}, {gn_attr_int(3)}, &c));
  EXPECT_EQ(e.code, GN_ERR_UNSUPPORTED);
  EXPECT_NE(e.msg.find("[embedding_backward] no kernel for device type 'cpu' and dtype int64"), std::string::npos)
      << e.msg;
}

TEST(Dispatch, CreationOpsUseDefaultDeviceAndAttributes) {
  Runtime r;
  T c;
  int64_t shape[2] = {2, 2};
  GN_OK_OR_FAIL(call1(r.rt, "full", {}, {gn_attr_ints(shape, 2), gn_attr_float(7)}, &c));
  EXPECT_EQ(gn_tensor_dtype(c.t), GN_F32);
  EXPECT_EQ(values<float>(c), (std::vector<float>{7, 7, 7, 7}));
  T ar;
  GN_OK_OR_FAIL(call1(r.rt, "arange", {}, {gn_attr_float(0), gn_attr_float(5), gn_attr_float(2)}, &ar));
  EXPECT_EQ(gn_tensor_dtype(ar.t), GN_I64);
  EXPECT_EQ(values<int64_t>(ar), (std::vector<int64_t>{0, 2, 4}));
}

TEST(Dispatch, SplitReturnsViews) {
  Runtime r;
  T a = make<float>(r.rt, r.cpu, {0, 1, 2, 3, 4}, {5}, GN_F32);
  const gn_op* split = nullptr;
  GN_OK_OR_FAIL(gn_op_find(r.rt, "split", &split));
  int64_t sizes[1] = {2};
  gn_attr_value at[1] = {gn_attr_ints(sizes, 1)};
  size_t n = 0;
  GN_OK_OR_FAIL(gn_op_output_count(r.rt, split, &a.t, 1, at, 1, &n));
  ASSERT_EQ(n, 3u);
  gn_tensor* parts[3] = {};
  GN_OK_OR_FAIL(gn_op_call(r.rt, split, &a.t, 1, at, 1, parts, 3));
  T p0(parts[0]), p1(parts[1]), p2(parts[2]);
  EXPECT_TRUE(gn_tensor_shares_storage(p1.t, a.t));
  EXPECT_EQ(values<float>(p1), (std::vector<float>{2, 3}));
  EXPECT_EQ(values<float>(p2), (std::vector<float>{4}));
}

TEST(Dispatch, ZeroDimHostTensorJoinsOtherOpsAndEmptyTensorsWork) {
  Runtime r;
  int64_t zero_shape[2] = {0, 3};
  gn_tensor* e = nullptr;
  GN_OK_OR_FAIL(gn_tensor_empty(r.rt, zero_shape, 2, GN_F32, r.cpu, &e));
  T empty(e);
  T b = make<float>(r.rt, r.cpu, {1, 2, 3}, {3}, GN_F32);
  T c;
  GN_OK_OR_FAIL(call1(r.rt, "add", {empty.t, b.t}, {}, &c));
  EXPECT_EQ(c.shape(), (std::vector<int64_t>{0, 3}));
  T s;
  GN_OK_OR_FAIL(call1(r.rt, "sum", {empty.t}, {}, &s));
  EXPECT_EQ(values<float>(s), (std::vector<float>{0}));
}

}  // namespace

namespace {

// Two runtimes with different plugin sets live side by side in one process:
// this is how the cross-backend suite compares a backend with the reference.
TEST(Runtimes, TwoRuntimesWithDifferentOptionsCoexist) {
  Runtime a("reference");
  Runtime b("reference", "cpu=reference");
  T x = make<float>(a.rt, a.cpu, {1, 2, 3}, {3}, GN_F32);
  T y = make<float>(b.rt, b.cpu, {1, 2, 3}, {3}, GN_F32);
  T ex, ey;
  GN_OK_OR_FAIL(call1(a.rt, "exp", {x.t}, {}, &ex));
  GN_OK_OR_FAIL(call1(b.rt, "exp", {y.t}, {}, &ey));
  EXPECT_EQ(values<float>(ex), values<float>(ey));
  // A tensor of one runtime cannot be fed to the other.
  T z;
  Err e = take(call1(b.rt, "exp", {x.t}, {}, &z));
  EXPECT_EQ(e.code, GN_ERR_INVALID_ARGUMENT);
  EXPECT_NE(e.msg.find("another runtime"), std::string::npos) << e.msg;
}

// The runtime outlives gn_runtime_destroy while tensors still hold storage.
TEST(Runtimes, TensorsKeepTheRuntimeAlive) {
  gn_tensor* t = nullptr;
  {
    Runtime r;
    T x = make<float>(r.rt, r.cpu, {4, 5}, {2}, GN_F32);
    t = x.t;
    x.t = nullptr;
  }  // runtime destroyed here; t still valid
  std::vector<float> v(2);
  gn_status* st = gn_tensor_to_host(t, v.data(), sizeof(float) * 2);
  EXPECT_EQ(st, nullptr) << gn_status_message(st);
  gn_status_free(st);
  EXPECT_EQ(v, (std::vector<float>{4, 5}));
  gn_tensor_release(t);
}

}  // namespace

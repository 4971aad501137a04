// tests/backends/reference/harness.h - call the reference kernels without the
// core.
//
// A fake gn_host_api records what gn_plugin_init registers (kernels keyed by
// (op, dtype), device types, op schemas); run() then calls one kernel the way
// the dispatcher would, on HostTensors: strided byte buffers of any dtype
// built from and read back as doubles (or exact int64s).  There is no
// inference here: tests allocate outputs of the right shape and dtype and pass
// every attribute explicitly, complete and in ops.def order.
//
//   HostTensor a = HostTensor::of({1, 2, 3, 4, 5, 6}, {2, 3}, GN_F32);
//   HostTensor b = HostTensor::of({10, 20, 30}, {3}, GN_F32);
//   HostTensor y = HostTensor::zeros({2, 3}, GN_F32);
//   ASSERT_OK(run("add", GN_F32, {a, b}, {y}, {af(1.0)}));
//   expect_values(y, {11, 22, 33, 14, 25, 36});
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <source_location>
#include <string>
#include <utility>
#include <vector>

#include "../../core/fake_host.h"
#include "genesis/plugin.h"

extern "C" gn_status* gn_plugin_init(const gn_host_api* host, gn_plugin_info* info);

namespace reftest {

// ----------------------------------------------------------------------------
// statuses

struct StatusDelete {
  void operator()(gn_status* s) const { delete s; }
};
using Status = std::unique_ptr<gn_status, StatusDelete>;

inline int32_t code(const Status& s) { return s ? s->code : GN_OK; }
inline std::string message(const Status& s) { return s ? s->msg : std::string("OK"); }

#define ASSERT_OK(expr)                                                           \
  do {                                                                            \
    ::reftest::Status st_ = (expr);                                               \
    ASSERT_TRUE(st_ == nullptr) << #expr << " failed: " << (st_ ? st_->msg : ""); \
  } while (0)
#define EXPECT_OK(expr)                                                           \
  do {                                                                            \
    ::reftest::Status st_ = (expr);                                               \
    EXPECT_TRUE(st_ == nullptr) << #expr << " failed: " << (st_ ? st_->msg : ""); \
  } while (0)
// Expect a failure with gn_code c.
#define EXPECT_CODE(expr, c)                                                          \
  do {                                                                                \
    ::reftest::Status st_ = (expr);                                                   \
    EXPECT_EQ(::reftest::code(st_), (c)) << #expr << ": " << ::reftest::message(st_); \
  } while (0)

// ----------------------------------------------------------------------------
// what the plugin registered

struct Registry {
  gn_status* init_status = nullptr;  // gn_plugin_init's answer (NULL = OK)
  gn_plugin_info info{};
  std::map<std::pair<std::string, int32_t>, gn_kernel_desc> kernels;
  std::map<std::string, gn_device_vtable> devices;
  std::vector<std::string> ops;   // schemas the plugin registered itself
  std::vector<std::string> logs;  // messages passed to host->log
};

// The registry, filled by calling gn_plugin_init once per process.
const Registry& registry();

// Kernel registered for (op, dtype) (or GN_DTYPE_ANY), NULL if none.
const gn_kernel_desc* find_kernel(const std::string& op, int32_t dtype);

// Device type registered under name, NULL if none.
const gn_device_vtable* find_device(const std::string& name);

// The fake host table itself (status_new etc.), for tests of device vtables.
const gn_host_api* host();

// ----------------------------------------------------------------------------
// tensors

// A strided tensor in a shared host byte buffer; copies share the buffer, so
// views (transposed, expanded, ...) alias their source like torch views.
struct HostTensor {
  int32_t dtype = GN_F32;
  std::vector<int64_t> shape, strides;  // strides in elements
  int64_t offset = 0;                   // in elements
  std::shared_ptr<std::vector<uint8_t>> buf;

  // Contiguous zeros.
  static HostTensor zeros(const std::vector<int64_t>& shape, int32_t dtype);
  // Contiguous tensor of vals (row-major; converted with round to nearest).
  static HostTensor of(const std::vector<double>& vals, const std::vector<int64_t>& shape, int32_t dtype);
  // Exact integers (int64 beyond 2^53 stays exact).
  static HostTensor of_ints(const std::vector<int64_t>& vals, const std::vector<int64_t>& shape, int32_t dtype);
  // 0-d tensor.
  static HostTensor scalar(double v, int32_t dtype);
  // Same values as of(...), but stored non-contiguously: column-major with a
  // gap after every element and a nonzero byte offset.
  static HostTensor strided_of(const std::vector<double>& vals, const std::vector<int64_t>& shape, int32_t dtype);

  int64_t numel() const;
  int32_t ndim() const { return (int32_t)shape.size(); }
  // Address of the element with row-major linear index i.
  uint8_t* ptr(int64_t i) const;
  // All elements in row-major order.
  std::vector<double> values() const;
  std::vector<int64_t> ints() const;
  double at(int64_t i) const;
  // Raw 16-bit pattern of element i (f16/bf16).
  uint16_t bits16(int64_t i) const;

  // Views sharing the buffer.
  HostTensor transposed(int32_t d0, int32_t d1) const;
  HostTensor expanded(const std::vector<int64_t>& shape) const;  // size-1/new dims: stride 0
  HostTensor sliced(int32_t dim, int64_t start, int64_t len, int64_t step = 1) const;
  // Dense row-major copy.
  HostTensor contiguous() const;

  // The borrowed view run() passes to kernels (valid while *this lives).
  gn_tensor_view view() const;
};

// ----------------------------------------------------------------------------
// attributes and calls

// One attribute value; the harness keeps the storage alive during run().
struct Attr {
  int32_t kind = GN_ATTR_INT;
  int64_t i = 0;
  double f = 0.0;
  std::vector<int64_t> ints;
  std::string s;
};
inline Attr ai(int64_t v) {
  Attr a;
  a.kind = GN_ATTR_INT;
  a.i = v;
  return a;
}
inline Attr af(double v) {
  Attr a;
  a.kind = GN_ATTR_FLOAT;
  a.f = v;
  return a;
}
inline Attr aints(std::vector<int64_t> v) {
  Attr a;
  a.kind = GN_ATTR_INTS;
  a.ints = std::move(v);
  return a;
}
inline Attr astr(std::string v) {
  Attr a;
  a.kind = GN_ATTR_STRING;
  a.s = std::move(v);
  return a;
}
inline Attr adevice() {
  Attr a;
  a.kind = GN_ATTR_DEVICE;
  return a;
}  // cpu:0

// Call the kernel registered for (op, kernel_dtype) as the dispatcher would.
// Outputs are written in place (they share buffers with the caller's copies).
// A missing kernel is a GN_ERR_NOT_FOUND status.
Status run(const std::string& op, int32_t kernel_dtype, const std::vector<HostTensor>& in,
           const std::vector<HostTensor>& out, const std::vector<Attr>& attrs = {}, uint64_t seed = 0,
           uint64_t offset = 0);

// ----------------------------------------------------------------------------
// comparisons

// Every value of t within tol of want (absolute + relative); NaN matches NaN,
// infinities must match exactly.
// Failures name the caller's line.
void expect_values(const HostTensor& t, const std::vector<double>& want, double tol = 0.0,
                   std::source_location loc = std::source_location::current());
// Every value of t exactly equal to want (as int64).
void expect_ints(const HostTensor& t, const std::vector<int64_t>& want,
                 std::source_location loc = std::source_location::current());
// Same element-wise rule on plain vectors.
void expect_near_vec(const std::vector<double>& got, const std::vector<double>& want, double tol,
                     std::source_location loc = std::source_location::current());

// Round a double through dtype (what a kernel storing v would produce).
double round_to(double v, int32_t dtype);

}  // namespace reftest

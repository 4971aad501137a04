// tests/backends/cuda/cuda_test_util.h - a runtime with the cuda plugin (and
// the reference, for host tensors), skipping when there is no CUDA device,
// plus shorthands for tensors and ops on it.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "util.h"  // tests/core/runtime/util.h

namespace cudat {

struct CudaRt {
  gt::Runtime base{"reference,cuda"};
  gn_runtime* rt = base.rt;
  gn_device host = base.cpu;
  gn_device dev{};
  bool has_dev = false;
  std::string note;
  CudaRt() {
    if (gn_device_count(rt, "cuda") > 0) {
      gn_status* st = gn_device_parse(rt, "cuda:0", &dev);
      has_dev = st == nullptr;
      gn_status_free(st);
    }
    for (size_t i = 0; i < gn_device_type_count(rt); ++i) {
      gn_device_type_record rec{};
      rec.struct_size = sizeof(rec);
      gn_status* st = gn_device_type_get(rt, i, &rec);
      if (!st && std::string(rec.name) == "cuda") note = rec.note ? rec.note : "";
      gn_status_free(st);
    }
  }
};

inline CudaRt& crt() {
  static CudaRt* r = new CudaRt();  // one CUDA context for the whole binary
  return *r;
}

#define CUDA_REQUIRE_DEVICE()                                                               \
  do {                                                                                      \
    if (!::cudat::crt().has_dev) GTEST_SKIP() << "no cuda device: " << ::cudat::crt().note; \
  } while (0)

inline void ok(gn_status* st, const char* what) {
  EXPECT_EQ(st, nullptr) << what << ": " << gn_status_message(st);
  gn_status_free(st);
}

inline gt::T empty(const std::vector<int64_t>& shape, int32_t dtype, gn_device dev) {
  gn_tensor* t = nullptr;
  ok(gn_tensor_empty(crt().rt, shape.data(), (int32_t)shape.size(), dtype, dev, &t), "gn_tensor_empty");
  return gt::T(t);
}

inline gt::T from_host(const std::vector<float>& v, const std::vector<int64_t>& shape, gn_device dev) {
  gn_tensor* t = nullptr;
  ok(gn_tensor_from_host(crt().rt, v.data(), shape.data(), (int32_t)shape.size(), GN_F32, dev, &t), "from_host");
  return gt::T(t);
}

inline std::vector<float> to_host(const gt::T& t) {
  std::vector<float> out((size_t)gn_tensor_numel(t.t));
  ok(gn_tensor_to_host(t.t, out.data(), out.size() * sizeof(float)), "to_host");
  return out;
}

// One-output op call; the tensor is empty (t == nullptr) on error.
inline gt::T call(const char* name, std::vector<gn_tensor*> in, std::vector<gn_attr_value> attrs = {}) {
  gt::T out;
  gn_status* st = gt::call1(crt().rt, name, std::move(in), std::move(attrs), &out);
  EXPECT_EQ(st, nullptr) << name << ": " << gn_status_message(st);
  gn_status_free(st);
  return out;
}

inline void fill(const gt::T& t, double v) {
  const gn_op* op = nullptr;
  ok(gn_op_find(crt().rt, "fill", &op), "find fill");
  gn_tensor* in[1] = {t.t};
  gn_attr_value a[1] = {gn_attr_float(v)};
  ok(gn_op_call(crt().rt, op, in, 1, a, 1, nullptr, 0), "fill");
}

inline gn_memory_stats stats() {
  gn_memory_stats s{};
  s.struct_size = sizeof(s);
  ok(gn_memory_stats_get(crt().rt, crt().dev, &s), "memory stats");
  return s;
}

inline void sync() { ok(gn_device_synchronize(crt().rt, crt().dev), "device synchronize"); }

}  // namespace cudat

// bench/gpu/bench_util.h - what the GPU benchmarks share (gpu_bench.cpp,
// ops_bench.cpp): the runtime and device, status checks, op calls through the
// public C API, random inputs, and device timing.
//
// Timing: CUDA events recorded on the native stream of Genesis' current cuda
// stream around each call (outputs allocated per call, as PyTorch does),
// after warm-up; the median of the reps, in milliseconds.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "genesis/genesis.h"

namespace bench {

inline gn_runtime* rt = nullptr;
inline gn_device dev{};

// Failures throw; the benchmarks report them per case.
inline void check(gn_status* st, const char* what) {
  if (!st) return;
  std::string msg = std::string(what) + ": " + gn_status_message(st);
  gn_status_free(st);
  throw std::runtime_error(msg);
}
inline void cuda_check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

// Creates rt over plugin_dir (nullptr: the default paths) and picks cuda:0; false (and why, on stderr) when it cannot.
inline bool open_cuda(const char* plugin_dir, const char* tool) {
  gn_runtime_options o{};
  o.struct_size = sizeof(o);
  o.plugin_path = plugin_dir;
  if (gn_status* st = gn_runtime_create(&o, &rt)) {
    std::fprintf(stderr, "%s: runtime: %s\n", tool, gn_status_message(st));
    gn_status_free(st);
    return false;
  }
  if (gn_device_count(rt, "cuda") < 1 || gn_device_parse(rt, "cuda:0", &dev)) {
    std::fprintf(stderr, "%s: no cuda device (see `genesis info`)\n", tool);
    return false;
  }
  return true;
}

inline cudaStream_t native_stream() {
  return static_cast<cudaStream_t>(gn_stream_native(gn_stream_get_current(rt, dev)));
}

inline const gn_op* op(const char* name) {
  const gn_op* o = nullptr;
  check(gn_op_find(rt, name, &o), name);
  return o;
}

// Attribute values: an attribute of `kind` whose value set(a.u) writes.
template <class Set>
inline gn_attr_value attr(int32_t kind, Set&& set) {
  gn_attr_value a{};
  a.kind = kind;
  set(a.u);
  return a;
}
inline gn_attr_value ai(int64_t v) {
  return attr(GN_ATTR_INT, [&](auto& u) { u.i = v; });
}
inline gn_attr_value af(double v) {
  return attr(GN_ATTR_FLOAT, [&](auto& u) { u.f = v; });
}
inline gn_attr_value aints(const std::vector<int64_t>& v) {
  return attr(GN_ATTR_INTS, [&](auto& u) {
    u.ints.data = v.data();
    u.ints.size = v.size();
  });
}
inline gn_attr_value adev(gn_device d) {
  return attr(GN_ATTR_DEVICE, [&](auto& u) { u.device = d; });
}

// The output of the creation op `name` (no inputs) called with attributes at.
inline gn_tensor* create(const char* name, const std::vector<gn_attr_value>& at) {
  gn_tensor* t = nullptr;
  check(gn_op_call(rt, op(name), nullptr, 0, at.data(), at.size(), &t, 1), name);
  return t;
}
// randn(shape) on the device in dtype.
inline gn_tensor* randn(std::vector<int64_t> shape, int32_t dtype) {
  return create("randn", {aints(shape), ai(dtype), adev(dev)});
}
// randint in [lo, hi) as int64 on the device.
inline gn_tensor* randint(int64_t lo, int64_t hi, std::vector<int64_t> shape) {
  return create("randint", {ai(lo), ai(hi), aints(shape), ai(GN_I64), adev(dev)});
}

// Calls o; releases the outputs (or hands them to `keep`).
inline void call(const gn_op* o, std::vector<gn_tensor*> in, std::vector<gn_attr_value> at, size_t n_out,
                 std::vector<gn_tensor*>* keep = nullptr) {
  std::vector<gn_tensor*> outs(n_out, nullptr);
  check(gn_op_call(rt, o, in.data(), in.size(), at.data(), at.size(), outs.data(), n_out), gn_op_name(o));
  if (keep)
    *keep = outs;
  else
    for (gn_tensor* t : outs) gn_tensor_release(t);
}

// Median device time (ms) of fn over reps, after warm-up calls.
inline double time_ms(const std::function<void()>& fn, int reps = 20, int warm = 3) {
  cudaStream_t s = native_stream();
  cudaEvent_t a, b;
  cuda_check(cudaEventCreate(&a), "event");
  cuda_check(cudaEventCreate(&b), "event");
  for (int i = 0; i < warm; ++i) fn();
  check(gn_device_synchronize(rt, dev), "sync");
  std::vector<double> ts;
  for (int i = 0; i < reps; ++i) {
    cuda_check(cudaEventRecord(a, s), "record");
    fn();
    cuda_check(cudaEventRecord(b, s), "record");
    cuda_check(cudaEventSynchronize(b), "sync");
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, a, b), "elapsed");
    ts.push_back(ms);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(ts.begin(), ts.end());
  return ts[ts.size() / 2];
}

}  // namespace bench

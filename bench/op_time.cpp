// bench/op_time.cpp - the time of one op call on one set of plugins, through the C API: for A/B
// runs of a backend (two builds of a plugin, each in its own directory) on sizes test-ops' perf
// mode does not reach.
//
//   bench_op_time PLUGIN_DIR OP DTYPE N [dense|bcast] [INT_ATTR]
//
// Inputs: as many as the op's schema needs at least, N elements each (bcast: the first is one
// (1, N/256) row broadcast against (256, N/256)), values in [-0.7, 1.9] cast to DTYPE (f32, f64,
// f16, bf16, i32, i64). One output, allocated by the first call and reused. Prints the median
// and the fastest of 7 rounds, each the mean of enough calls for about 20M elements.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "genesis/genesis.h"

namespace {

void check(gn_status* s) {
  if (!s) return;
  std::fprintf(stderr, "bench_op_time: %s\n", gn_status_message(s));
  gn_status_free(s);
  std::exit(1);
}

int32_t dtype_of(const char* s) {
  const std::pair<const char*, int32_t> names[] = {{"f32", GN_F32},   {"f64", GN_F64}, {"f16", GN_F16},
                                                   {"bf16", GN_BF16}, {"i32", GN_I32}, {"i64", GN_I64}};
  for (const auto& [n, d] : names)
    if (!std::strcmp(s, n)) return d;
  std::fprintf(stderr, "bench_op_time: unknown dtype %s (f32 f64 f16 bf16 i32 i64)\n", s);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: bench_op_time PLUGIN_DIR OP DTYPE N [dense|bcast] [INT_ATTR]\n");
    return 2;
  }
  const char* dir = argv[1];
  const char* name = argv[2];
  const int32_t dt = dtype_of(argv[3]);
  const int64_t n = std::atoll(argv[4]);
  const std::string layout = argc > 5 ? argv[5] : "dense";
  const bool has_attr = argc > 6;
  if (n < 256 || (layout != "dense" && layout != "bcast")) {
    std::fprintf(stderr, "bench_op_time: N >= 256 and a layout of dense or bcast\n");
    return 2;
  }
  gn_runtime_options o{};
  o.struct_size = sizeof(o);
  o.plugin_path = dir;
  o.flags = GN_RUNTIME_NO_DEFAULT_PATHS;
  gn_runtime* rt = nullptr;
  check(gn_runtime_create(&o, &rt));
  gn_device cpu;
  check(gn_device_parse(rt, "cpu", &cpu));
  const gn_op *op = nullptr, *cast = nullptr;
  check(gn_op_find(rt, name, &op));
  check(gn_op_find(rt, "cast", &cast));
  const int nin = gn_op_get_schema(op)->min_inputs;

  std::vector<double> vals(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) vals[i] = 0.5 + double((i * 7919) % 1000) / 700.0 - (i % 3 == 0 ? 1.2 : 0.0);
  std::vector<gn_tensor*> in;
  for (int k = 0; k < nin; ++k) {
    int64_t shape[2] = {n, 1};
    int ndim = 1;
    if (layout == "bcast") shape[0] = k == 0 ? 1 : 256, shape[1] = n / 256, ndim = 2;
    gn_tensor* f64 = nullptr;
    check(gn_tensor_from_host(rt, vals.data(), shape, ndim, GN_F64, cpu, &f64));
    gn_attr_value to = gn_attr_int(dt);
    gn_tensor* t[1] = {nullptr};
    check(gn_op_call(rt, cast, &f64, 1, &to, 1, t, 1));
    gn_tensor_release(f64);
    in.push_back(t[0]);
  }
  gn_attr_value attr = gn_attr_int(has_attr ? std::atoll(argv[6]) : 0);
  gn_tensor* out[1] = {nullptr};
  auto call = [&] { check(gn_op_call(rt, op, in.data(), in.size(), &attr, has_attr ? 1 : 0, out, 1)); };
  call();
  const int iters = int(std::clamp<int64_t>(20000000 / n, 20, 200000));
  std::vector<double> us;
  for (int round = 0; round < 7; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) call();
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / iters);
  }
  std::sort(us.begin(), us.end());
  std::printf("%s %s %s n=%lld: median %.3f us, fastest %.3f us\n", name, argv[3], layout.c_str(),
              static_cast<long long>(n), us[3], us[0]);
  gn_tensor_release(out[0]);
  for (gn_tensor* t : in) gn_tensor_release(t);
  gn_runtime_destroy(rt);
  return 0;
}

// tests/backends/cuda/cuda_launch_test.cpp - the elementwise launchers go
// through cuLaunchKernel with a function handle cached per kernel
// (common.cuh launch<>): kernels that share a signature (the 16-byte
// vectorised dense kernel and its element-by-element twin) must each run their
// own code.  A shared handle ran the vectorised kernel on a misaligned view
// (cudaErrorMisalignedAddress, or wrong values); this test catches that.
#include <cmath>
#include <vector>

#include "cuda_test_util.h"

namespace {

using cudat::crt;

std::vector<double> sub_host(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> r(a.size());
  for (size_t i = 0; i < a.size(); ++i) r[i] = a[i] - b[i];
  return r;
}

std::vector<double> to_host64(gn_tensor* t) {
  std::vector<double> out((size_t)gn_tensor_numel(t));
  cudat::ok(gn_tensor_to_host(t, out.data(), out.size() * sizeof(double)), "to_host");
  return out;
}

TEST(CudaLaunch, KernelsOfOneSignatureKeepTheirOwnHandles) {
  CUDA_REQUIRE_DEVICE();
  gn_runtime* rt = crt().rt;
  // f64 `sub` runs nowhere else in this binary, so the first launch below is
  // the vectorised kernel's; the misaligned views then need the other one.
  const int64_t n = 4097;
  std::vector<double> h(n), g(n);
  for (int64_t i = 0; i < n; ++i) h[i] = 0.5 * (double)i - 7.0, g[i] = std::sin((double)i);
  gn_tensor *x = nullptr, *y = nullptr;
  cudat::ok(gn_tensor_from_host(rt, h.data(), &n, 1, GN_F64, crt().dev, &x), "from_host");
  cudat::ok(gn_tensor_from_host(rt, g.data(), &n, 1, GN_F64, crt().dev, &y), "from_host");
  gt::T tx(x), ty(y);
  for (int64_t offset : {0, 1, 0, 1}) {  // aligned (16-byte loads), misaligned by 8 bytes, and back
    const int64_t len = n - 1;
    gn_tensor *xs = nullptr, *ys = nullptr;
    cudat::ok(gn_tensor_slice(x, 0, offset, offset + len, 1, &xs), "slice");
    cudat::ok(gn_tensor_slice(y, 0, offset, offset + len, 1, &ys), "slice");
    gt::T txs(xs), tys(ys);
    gt::T d = cudat::call("sub", {xs, ys});
    ASSERT_NE(d.t, nullptr) << "offset " << offset;
    std::vector<double> got = to_host64(d.t);
    std::vector<double> want = sub_host(std::vector<double>(h.begin() + offset, h.begin() + offset + len),
                                        std::vector<double>(g.begin() + offset, g.begin() + offset + len));
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << "offset " << offset << " element " << i;
  }
}

}  // namespace

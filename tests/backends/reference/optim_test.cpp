// optim_test.cpp - sgd_step and adamw_step over 3 steps against hand-derived
// values and torch.optim sequences; multi_sum_sq / multi_scale_ /
// multi_unscale_check_ against hand values.
#include <cmath>
#include <limits>
#include <vector>

#include "gradcheck.h"
#include "harness.h"

using namespace reftest;

namespace {

using Seq = std::vector<std::vector<double>>;  // param after steps 1, 2, 3

// The fixed problem of the torch fixtures: p0 and the gradient of each step.
const std::vector<double> kP0 = {0.5, -1.25, 2.0, 0.0};
const Seq kGrads = {{0.1, -0.2, 0.3, -0.4}, {0.05, 0.25, -0.15, 0.5}, {-0.3, 0.1, 0.2, -0.05}};

// sgd attrs: lr, momentum, dampening, weight_decay, nesterov, maximize, step
std::vector<Attr> sgd_attrs(double lr, double mom, double damp, double wd, int nesterov, int maximize, int64_t step) {
  return {af(lr), af(mom), af(damp), af(wd), ai(nesterov), ai(maximize), ai(step)};
}
// adamw attrs: lr, beta1, beta2, eps, weight_decay, step, decoupled, maximize
std::vector<Attr> adam_attrs(double lr, double b1, double b2, double eps, double wd, int64_t step, int decoupled,
                             int maximize) {
  return {af(lr), af(b1), af(b2), af(eps), af(wd), ai(step), ai(decoupled), ai(maximize)};
}

void run_sgd(const Seq& want, double lr, double mom, double damp, double wd, int nesterov, int maximize) {
  HostTensor p = HostTensor::of(kP0, {4}, GN_F64),
             buf = HostTensor::of({7, 7, 7, 7}, {4}, GN_F64);  // garbage: step 1 overwrites
  for (int64_t s = 1; s <= 3; ++s) {
    std::vector<HostTensor> in = {p, HostTensor::of(kGrads[(size_t)s - 1], {4}, GN_F64)};
    if (mom != 0) in.push_back(buf);
    ASSERT_OK(run("sgd_step", GN_F64, in, {}, sgd_attrs(lr, mom, damp, wd, nesterov, maximize, s)));
    SCOPED_TRACE(::testing::Message() << "step " << s);
    expect_values(p, want[(size_t)s - 1], 1e-13);
  }
}

void run_adam(const Seq& want, double lr, double b1, double b2, double eps, double wd, int decoupled, int maximize) {
  HostTensor p = HostTensor::of(kP0, {4}, GN_F64), m = HostTensor::zeros({4}, GN_F64),
             v = HostTensor::zeros({4}, GN_F64);
  for (int64_t s = 1; s <= 3; ++s) {
    ASSERT_OK(run("adamw_step", GN_F64, {p, HostTensor::of(kGrads[(size_t)s - 1], {4}, GN_F64), m, v}, {},
                  adam_attrs(lr, b1, b2, eps, wd, s, decoupled, maximize)));
    SCOPED_TRACE(::testing::Message() << "step " << s);
    expect_values(p, want[(size_t)s - 1], 1e-13);
  }
}

}  // namespace

// ----------------------------------------------------------------------------
// sgd_step

TEST(OptimRef, SgdHandDerived) {
  // p = 1, g = 0.5 every step, lr 0.1, momentum 0.9:
  //   buf 0.5, 0.95, 1.355  ->  p 0.95, 0.855, 0.7195
  HostTensor p = HostTensor::of({1}, {1}, GN_F64), g = HostTensor::of({0.5}, {1}, GN_F64),
             buf = HostTensor::zeros({1}, GN_F64);
  const double want_p[] = {0.95, 0.855, 0.7195}, want_buf[] = {0.5, 0.95, 1.355};
  for (int s = 1; s <= 3; ++s) {
    ASSERT_OK(run("sgd_step", GN_F64, {p, g, buf}, {}, sgd_attrs(0.1, 0.9, 0, 0, 0, 0, s)));
    expect_values(p, {want_p[s - 1]}, 1e-15);
    expect_values(buf, {want_buf[s - 1]}, 1e-15);
  }
  // plain SGD with weight decay, no buffer: d = g + wd*p = 0.5 + 0.1*2 = 0.7; p = 2 - 0.5*0.7
  HostTensor q = HostTensor::of({2}, {}, GN_F64);
  ASSERT_OK(run("sgd_step", GN_F64, {q, HostTensor::scalar(0.5, GN_F64)}, {}, sgd_attrs(0.5, 0, 0, 0.1, 0, 0, 1)));
  expect_values(q, {1.65}, 1e-15);
  // nesterov step 1: buf = d, d = d + momentum*buf = 1.5 d: p = 1 - 0.1 * 1.5 * 0.5
  HostTensor r = HostTensor::of({1}, {1}, GN_F64), rb = HostTensor::zeros({1}, GN_F64);
  ASSERT_OK(run("sgd_step", GN_F64, {r, g, rb}, {}, sgd_attrs(0.1, 0.5, 0, 0, 1, 0, 1)));
  expect_values(r, {0.925}, 1e-15);
}

TEST(OptimRef, SgdMatchesTorchSequences) {
  // Generated with torch 1.13, float64: p = tensor(kP0); for g in kGrads: p.grad = g; opt.step()
  // torch.optim.SGD([p], lr=0.1)
  run_sgd({{0.49, -1.23, 1.97, 0.04000000000000001},
           {0.485, -1.255, 1.9849999999999999, -0.009999999999999995},
           {0.515, -1.265, 1.9649999999999999, -0.004999999999999994}},
          0.1, 0, 0, 0, 0, 0);
  // SGD(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01)
  run_sgd({{0.4895, -1.22875, 1.968, 0.04000000000000001},
           {0.47510945, -1.231019125, 1.9509288, 0.030964000000000016},
           {0.48873035649499996, -1.2409534202874999, 1.91580888408, 0.027303732400000023}},
          0.1, 0.9, 0.1, 0.01, 0, 0);
  // SGD(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.02)
  run_sgd({{0.4901, -1.22975, 1.9694, 0.036000000000000004},
           {0.48119782, -1.24283645, 1.96847508, 0.003735199999999998},
           {0.502601999924, -1.25105230439, 1.941767408856, 0.0024454366399999975}},
          0.05, 0.8, 0, 0.02, 1, 0);
  // SGD(lr=0.1, momentum=0.5, weight_decay=0.1, maximize=True)
  run_sgd({{0.505, -1.2575, 2.01, -0.04000000000000001},
           {0.50745, -1.223675, 1.9798999999999998, -0.009600000000000006},
           {0.4736005, -1.1845257500000002, 1.9650509999999999, 0.000695999999999994}},
          0.1, 0.5, 0, 0.1, 0, 1);
}

TEST(OptimRef, SgdMixedDtypesAndStrides) {
  // bf16 grad, f32 param stored with gaps, f16 buffer: each read and written in its own dtype
  HostTensor p = HostTensor::strided_of({1.0, -2.0}, {2}, GN_F32);
  HostTensor g = HostTensor::of({0.5, 0.25}, {2}, GN_BF16), buf = HostTensor::zeros({2}, GN_F16);
  ASSERT_OK(run("sgd_step", GN_F32, {p, g, buf}, {}, sgd_attrs(0.25, 0.5, 0, 0, 0, 0, 1)));
  expect_values(p, {0.875, -2.0625});
  expect_values(buf, {0.5, 0.25});
  // the update rounds once to the param dtype: 1 - 0.1*0.3 in bf16
  HostTensor q = HostTensor::of({1.0}, {1}, GN_BF16);
  ASSERT_OK(run("sgd_step", GN_BF16, {q, HostTensor::of({0.3}, {1}, GN_F64)}, {}, sgd_attrs(0.1, 0, 0, 0, 0, 0, 1)));
  expect_values(q, {round_to(1.0 - 0.1 * 0.3, GN_BF16)});
}

TEST(OptimRef, SgdErrorsAndEmpty) {
  HostTensor p = HostTensor::zeros({2}, GN_F32), g = HostTensor::zeros({2}, GN_F32);
  EXPECT_CODE(run("sgd_step", GN_F32, {p, g}, {}, sgd_attrs(0.1, 0.9, 0, 0, 0, 0, 1)), GN_ERR_INVALID_ARGUMENT);
  EXPECT_CODE(run("sgd_step", GN_F32, {p, g}, {}, sgd_attrs(0.1, 0, 0, 0, 0, 0, 0)), GN_ERR_INVALID_ARGUMENT);
  EXPECT_CODE(run("sgd_step", GN_F32, {p, HostTensor::zeros({3}, GN_F32)}, {}, sgd_attrs(0.1, 0, 0, 0, 0, 0, 1)),
              GN_ERR_SHAPE);
  ASSERT_OK(run("sgd_step", GN_F32,
                {HostTensor::zeros({0}, GN_F32), HostTensor::zeros({0}, GN_F32), HostTensor::zeros({0}, GN_F32)}, {},
                sgd_attrs(0.1, 0.9, 0, 0, 1, 0, 1)));
}

// ----------------------------------------------------------------------------
// adamw_step

TEST(OptimRef, AdamHandDerived) {
  // step 1 without decay: m^ = g, v^ = g^2, so p -= lr * g / (|g| + eps)
  HostTensor p = HostTensor::of({1.0, -1.0}, {2}, GN_F64), m = HostTensor::zeros({2}, GN_F64),
             v = HostTensor::zeros({2}, GN_F64);
  ASSERT_OK(run("adamw_step", GN_F64, {p, HostTensor::of({0.5, -2.0}, {2}, GN_F64), m, v}, {},
                adam_attrs(0.1, 0.9, 0.999, 1e-8, 0.0, 1, 1, 0)));
  expect_values(p, {1.0 - 0.1 * 0.5 / (0.5 + 1e-8), -1.0 + 0.1 * 2.0 / (2.0 + 1e-8)}, 1e-15);
  expect_values(m, {0.05, -0.2}, 1e-15);
  expect_values(v, {0.001 * 0.25, 0.001 * 4.0}, 1e-15);
  // AdamW decays first: p = 1*(1 - 0.1*0.5) - 0.1 * 1/(1 + 0)
  HostTensor q = HostTensor::of({1.0}, {1}, GN_F64), qm = HostTensor::zeros({1}, GN_F64),
             qv = HostTensor::zeros({1}, GN_F64);
  ASSERT_OK(run("adamw_step", GN_F64, {q, HostTensor::of({3.0}, {1}, GN_F64), qm, qv}, {},
                adam_attrs(0.1, 0.9, 0.999, 0.0, 0.5, 1, 1, 0)));
  expect_values(q, {0.95 - 0.1}, 1e-15);
  // Adam adds wd*p to the gradient instead: g = -0.25 + 0.5*1 = 0.25 -> p = 1 - 0.1
  HostTensor r = HostTensor::of({1.0}, {1}, GN_F64), rm = HostTensor::zeros({1}, GN_F64),
             rv = HostTensor::zeros({1}, GN_F64);
  ASSERT_OK(run("adamw_step", GN_F64, {r, HostTensor::of({-0.25}, {1}, GN_F64), rm, rv}, {},
                adam_attrs(0.1, 0.9, 0.999, 0.0, 0.5, 1, 0, 0)));
  expect_values(r, {0.9}, 1e-15);
  expect_values(rm, {0.1 * 0.25}, 1e-15);
}

TEST(OptimRef, AdamMatchesTorchSequences) {
  // Generated with torch 1.13, float64, as the SGD sequences:
  // torch.optim.Adam([p], lr=0.01, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.1)
  run_adam({{0.4900000006666666, -1.2400000003076923, 1.9900000002, 0.009999999750000006},
            {0.4802993993024594, -1.2364380060067413, 1.9825887841544811, 0.008363870568318003},
            {0.4811518773688973, -1.2332503387129135, 1.9741318272743689, 0.007589662986393568}},
           0.01, 0.9, 0.99, 1e-8, 0.1, 0, 0);
  // torch.optim.AdamW([p], lr=0.01, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.1)
  run_adam({{0.489500099999, -1.2387500499997501, 1.9880000333332222, 0.0099999750000625},
            {0.47980415424796247, -1.2397137312279085, 1.9838874508636313, 0.007787538896190008},
            {0.4835848228311738, -1.2421398652272668, 1.976917816843403, 0.006730310468785857}},
           0.01, 0.8, 0.95, 1e-6, 0.1, 1, 0);
  // torch.optim.AdamW([p], lr=0.02, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01, maximize=True)
  run_adam({{0.5198999980000002, -1.269749999, 2.0195999993333333, -0.019999999500000008},
            {0.5384396084180259, -1.2662414039105652, 2.024522819902046, -0.016741354338586006},
            {0.5313874507326386, -1.2597753091870973, 2.0342013463300055, -0.015225121008276398}},
           0.02, 0.9, 0.999, 1e-8, 0.01, 1, 1);
}

TEST(OptimRef, AdamMixedDtypesAndErrors) {
  // bf16 param with f32 state (the usual mixed-precision layout), strided state
  HostTensor p = HostTensor::of({1.0, 2.0}, {2}, GN_BF16), m = HostTensor::strided_of({0, 0}, {2}, GN_F32),
             v = HostTensor::zeros({2}, GN_F32);
  ASSERT_OK(run("adamw_step", GN_BF16, {p, HostTensor::of({0.5, -0.5}, {2}, GN_BF16), m, v}, {},
                adam_attrs(0.25, 0.5, 0.75, 0.0, 0.0, 1, 1, 0)));
  expect_values(p, {0.75, 2.25});
  expect_values(m, {0.25, -0.25});
  expect_values(v, {0.0625, 0.0625});
  EXPECT_CODE(run("adamw_step", GN_BF16, {p, HostTensor::zeros({2}, GN_BF16), m, v}, {},
                  adam_attrs(0.1, 0.9, 0.999, 1e-8, 0, 0, 1, 0)),
              GN_ERR_INVALID_ARGUMENT);  // step counts from 1
  EXPECT_CODE(run("adamw_step", GN_BF16, {p, HostTensor::zeros({2}, GN_BF16), m, HostTensor::zeros({3}, GN_F32)}, {},
                  adam_attrs(0.1, 0.9, 0.999, 1e-8, 0, 1, 1, 0)),
              GN_ERR_SHAPE);
}

// ----------------------------------------------------------------------------
// multi-tensor helpers

TEST(OptimRef, MultiSumSq) {
  // 1^2 + 2^2 (f32) + 3^2 + 4^2 (bf16, strided) + 5^2 (f64 0-d) + nothing (empty)
  std::vector<HostTensor> in = {HostTensor::of({1, 2}, {2}, GN_F32), HostTensor::strided_of({3, 4}, {2, 1}, GN_BF16),
                                HostTensor::scalar(5, GN_F64), HostTensor::zeros({0, 3}, GN_F16)};
  for (int32_t dt : {GN_F32, GN_F64}) {
    HostTensor out = HostTensor::zeros({}, dt);
    ASSERT_OK(run("multi_sum_sq", dt, in, {out}, {}));
    expect_values(out, {55});
  }
  // accumulated in double from each input's own values: 0.1f^2 * 3 rounded once
  HostTensor out = HostTensor::zeros({}, GN_F64);
  ASSERT_OK(run("multi_sum_sq", GN_F64, {HostTensor::of({0.1, 0.1, 0.1}, {3}, GN_F32)}, {out}, {}));
  const double t = (double)0.1f;
  expect_values(out, {t * t + t * t + t * t}, 1e-16);
  ASSERT_OK(run("multi_sum_sq", GN_F64, {HostTensor::zeros({0}, GN_F32)}, {out}, {}));
  expect_values(out, {0});
}

TEST(OptimRef, MultiScale) {
  HostTensor a = HostTensor::of({2, 4}, {2}, GN_F32), b = HostTensor::strided_of({1, 3}, {2, 1}, GN_BF16),
             c = HostTensor::scalar(8, GN_F64), e = HostTensor::zeros({0}, GN_F16);
  ASSERT_OK(run("multi_scale_", GN_F32, {HostTensor::scalar(0.5, GN_F32), a, b, c, e}, {}, {}));
  expect_values(a, {1, 2});
  expect_values(b, {0.5, 1.5});
  expect_values(c, {4});
  EXPECT_CODE(run("multi_scale_", GN_F32, {HostTensor::of({1, 2}, {2}, GN_F32), a}, {}, {}), GN_ERR_SHAPE);
}

TEST(OptimRef, MultiUnscaleCheck) {
  const double inf = std::numeric_limits<double>::infinity();
  // all finite: scaled, found_inf left as it was (0 stays 0, 1 stays 1)
  for (double start : {0.0, 1.0}) {
    HostTensor found = HostTensor::scalar(start, GN_F32);
    HostTensor a = HostTensor::of({4, -8}, {2}, GN_F16), b = HostTensor::strided_of({2}, {1, 1}, GN_F32);
    ASSERT_OK(run("multi_unscale_check_", GN_F32, {HostTensor::scalar(0.25, GN_F32), found, a, b}, {}, {}));
    expect_values(found, {start});
    expect_values(a, {1, -2});
    expect_values(b, {0.5});
  }
  // an inf or a NaN anywhere sets found_inf; every tensor is still scaled
  for (double bad : {inf, -inf, (double)NAN}) {
    HostTensor found = HostTensor::scalar(0, GN_F32);
    HostTensor a = HostTensor::of({4, -8}, {2}, GN_F32), b = HostTensor::of({1, bad, 2}, {3}, GN_BF16);
    ASSERT_OK(run("multi_unscale_check_", GN_F32, {HostTensor::scalar(0.5, GN_F32), found, a, b}, {}, {}));
    expect_values(found, {1});
    expect_values(a, {2, -4});
    expect_values(b, {0.5, bad * 0.5, 1});
  }
  // no tensors to check
  HostTensor found = HostTensor::scalar(0, GN_F32);
  ASSERT_OK(run("multi_unscale_check_", GN_F32, {HostTensor::scalar(0.5, GN_F32), found}, {}, {}));
  expect_values(found, {0});
}

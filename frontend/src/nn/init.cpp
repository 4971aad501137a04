// init.cpp - torch.nn.init on the framework RNG.
#include "genesis/nn/init.hpp"

#include <cmath>

#include "genesis/autograd.hpp"

namespace genesis::nn::init {

namespace {
thread_local bool t_skip_init = false;
}  // namespace

SkipInitGuard::SkipInitGuard() : prev_(t_skip_init) { t_skip_init = true; }
SkipInitGuard::~SkipInitGuard() { t_skip_init = prev_; }
bool skip_init() { return t_skip_init; }

namespace {

Error invalid(const std::string& msg) { return Error(GN_ERR_INVALID_ARGUMENT, "[init] " + msg); }

// Random draws in float32 (float64 for f64 tensors), then copied into t.
Options draw_opts(const Tensor& t) {
  return {.dtype = t.dtype() == DType::f64 ? DType::f64 : DType::f32, .device = t.device()};
}

int64_t fan(const Tensor& t, const std::string& mode) {
  auto [in, out] = calculate_fan_in_and_fan_out(t);
  if (mode == "fan_in") return in;
  if (mode == "fan_out") return out;
  throw invalid("mode must be \"fan_in\" or \"fan_out\", got \"" + mode + "\"");
}

}  // namespace

double calculate_gain(const std::string& nl, double param) {
  if (nl == "linear" || nl == "identity" || nl == "sigmoid" || nl.rfind("conv", 0) == 0) return 1;
  if (nl == "tanh") return 5.0 / 3;
  if (nl == "relu") return std::sqrt(2.0);
  if (nl == "leaky_relu") return std::sqrt(2.0 / (1 + param * param));
  if (nl == "selu") return 3.0 / 4;
  throw invalid("unsupported nonlinearity \"" + nl + "\"");
}

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t) {
  if (t.dim() < 2) throw invalid("fan in and fan out need a tensor with at least 2 dims");
  int64_t receptive = 1;
  for (int64_t d = 2; d < t.dim(); ++d) receptive *= t.size(d);
  return {t.size(1) * receptive, t.size(0) * receptive};
}

Tensor& uniform_(Tensor& t, double a, double b) {
  NoGradGuard no_grad;
  t.copy_(rand(t.shape(), draw_opts(t)) * (b - a) + a);
  return t;
}

Tensor& normal_(Tensor& t, double mean, double std) {
  NoGradGuard no_grad;
  t.copy_(randn(t.shape(), draw_opts(t)) * std + mean);
  return t;
}

Tensor& constant_(Tensor& t, double val) {
  NoGradGuard no_grad;
  t.fill_(val);
  return t;
}
Tensor& zeros_(Tensor& t) { return constant_(t, 0); }
Tensor& ones_(Tensor& t) { return constant_(t, 1); }

Tensor& xavier_uniform_(Tensor& t, double gain) {
  auto [in, out] = calculate_fan_in_and_fan_out(t);
  const double a = gain * std::sqrt(6.0 / static_cast<double>(in + out));
  return uniform_(t, -a, a);
}

Tensor& xavier_normal_(Tensor& t, double gain) {
  auto [in, out] = calculate_fan_in_and_fan_out(t);
  return normal_(t, 0, gain * std::sqrt(2.0 / static_cast<double>(in + out)));
}

Tensor& kaiming_uniform_(Tensor& t, double a, const std::string& mode, const std::string& nonlinearity) {
  const double bound = std::sqrt(3.0) * calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(fan(t, mode)));
  return uniform_(t, -bound, bound);
}

Tensor& kaiming_normal_(Tensor& t, double a, const std::string& mode, const std::string& nonlinearity) {
  return normal_(t, 0, calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(fan(t, mode))));
}

}  // namespace genesis::nn::init

// genesis/amp.hpp - automatic mixed precision: the autocast guard (torch.autocast)
// with its per-op cast policy, and GradScaler (torch.cuda.amp.GradScaler).
//
//   genesis::GradScaler scaler;
//   {
//     genesis::autocast ac("cuda", genesis::bfloat16);
//     loss = criterion(model(x), y);
//   }
//   scaler.scale(loss).backward();
//   scaler.unscale_(optimizer);               // optional, e.g. before clip_grad_norm_
//   scaler.step(optimizer);                   // skipped when a gradient is inf/nan
//   scaler.update();
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "genesis/optim/optimizer.hpp"
#include "genesis/tensor.hpp"

namespace genesis::amp {

/** How autocast treats an op's floating inputs. */
enum class CastPolicy {
  none,             ///< left alone
  lower_precision,  ///< cast to the region's dtype (matmul, linear, bmm, attention, conv)
  fp32,             ///< cast f16/bf16 to float32 (softmax, norms, reductions, losses, exp, log, pow)
  promote           ///< mixed floating inputs cast to the widest of them
};

/** The policy of op `name` (one table, amp/policy.cpp); none for ops not listed. */
CastPolicy cast_policy(std::string_view name);
/** True when an enabled autocast region for device_type is active on this thread. */
bool is_autocast_enabled(const std::string& device_type = "cuda");
/** The low-precision dtype of device_type's innermost region (default f16 for cuda, bf16 for cpu). */
DType get_autocast_dtype(const std::string& device_type = "cuda");
/** Drops the cache of casted parameters (done when the outermost region exits). */
void clear_autocast_cache();

/** RAII autocast region (torch.autocast): thread-local, nests, restores the previous state. */
class autocast {
 public:
  /** Enters a region for device_type ("cuda", "cpu") with dtype bf16|f16 (default: f16 on cuda, bf16 on cpu). */
  explicit autocast(const std::string& device_type = "cuda", std::optional<DType> dtype = {}, bool enabled = true,
                    bool cache_enabled = true);
  /** Restores the previous state; clears the cast cache when the outermost region exits. */
  ~autocast();
  autocast(const autocast&) = delete;
  autocast& operator=(const autocast&) = delete;

 private:
  int32_t type_ = -1;  ///< device type id, -1 when the type is unknown (region disabled)
  bool prev_enabled_ = false;
  DType prev_dtype_ = DType::f16;
  bool prev_cache_ = true;
};

/** GradScaler options, defaults as torch. */
struct GradScalerOptions {
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  bool enabled = true;
};

/** Dynamic loss scaling: scale the loss, unscale/check gradients in one fused pass, skip bad steps. */
class GradScaler {
 public:
  /** A scaler with torch's defaults (init_scale 2^16, growth 2, backoff 0.5, interval 2000). */
  explicit GradScaler(GradScalerOptions o = {});
  /** outputs * scale (autograd-aware); outputs unchanged when disabled. */
  Tensor scale(const Tensor& outputs);
  /** Divides the optimizer's gradients by the scale in place and records inf/nan (one fused op, no sync). */
  void unscale_(optim::Optimizer& optimizer);
  /** Unscales if needed, then runs optimizer.step() unless inf/nan was found; returns whether it stepped. */
  bool step(optim::Optimizer& optimizer);
  /** Updates the scale (backoff on inf/nan, growth after growth_interval clean steps), on the device. */
  void update(std::optional<double> new_scale = {});
  /** The current scale (host sync); init_scale before the first scale(). */
  double get_scale() const;
  /** The scale as a 0-d float32 tensor (undefined before the first scale()). */
  const Tensor& scale_tensor() const { return scale_; }
  /** Whether scaling is enabled. */
  bool is_enabled() const { return o_.enabled; }
  /** Growth factor. */
  double get_growth_factor() const { return o_.growth_factor; }
  /** Backoff factor. */
  double get_backoff_factor() const { return o_.backoff_factor; }
  /** Growth interval. */
  int64_t get_growth_interval() const { return o_.growth_interval; }
  /** scale, growth_factor, backoff_factor, growth_interval, _growth_tracker (empty when disabled). */
  std::map<std::string, double> state_dict() const;
  /** Restores state_dict(); throws on an empty map or missing keys. */
  void load_state_dict(const std::map<std::string, double>& sd);

 private:
  enum class Stage { ready, unscaled, stepped };
  struct OptState {
    Stage stage = Stage::ready;
    std::vector<Tensor> found_inf;  ///< one 0-d f32 per device
  };
  void lazy_init(const Device& d);
  GradScalerOptions o_;
  Tensor scale_;           ///< 0-d float32 on the device of the first scaled output
  Tensor growth_tracker_;  ///< 0-d float32: consecutive clean steps
  double init_tracker_ = 0;
  std::map<const optim::Optimizer*, OptState> per_opt_;
};

}  // namespace genesis::amp

namespace genesis {
using amp::autocast;
using amp::GradScaler;
}  // namespace genesis

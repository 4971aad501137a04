// training_checkpoint.cpp - whole training states (model, optimizer,
// scheduler, scaler, RNG, step) as one checkpoint, restored all or nothing:
// every part is checked against the live objects before the first one is
// changed, so a truncated, corrupted or mismatched file leaves the run as it was.
#include <cmath>

#include "genesis/amp.hpp"
#include "genesis/io.hpp"
#include "genesis/nn/module.hpp"
#include "genesis/optim/lr_scheduler.hpp"
#include "genesis/optim/optimizer.hpp"

namespace genesis {

namespace {

Error mismatch(const std::string& what, const std::string& msg) {
  return Error(GN_ERR_INVALID_ARGUMENT, "[checkpoint] " + what + ": " + msg);
}

// Scheduler/scaler numbers as float64 0-d tensors: exact, and readable by any safetensors reader.
TensorMap numbers_to_tensors(const std::map<std::string, double>& m) {
  TensorMap out;
  for (const auto& [k, v] : m) out[k] = scalar_tensor(v, {.dtype = DType::f64});
  return out;
}

std::map<std::string, double> tensors_to_numbers(const TensorMap& m, const std::string& what) {
  std::map<std::string, double> out;
  for (const auto& [k, t] : m) {
    if (!t.defined() || t.numel() != 1)
      throw mismatch(what, "entry '" + k + "' should hold one number, it holds " +
                               (t.defined() ? std::to_string(t.numel()) : std::string("nothing")));
    out[k] = t.item<double>();
  }
  return out;
}

// Every key the live object's state_dict has must be present (extra keys are an error too).
void check_number_keys(const std::map<std::string, double>& live, const std::map<std::string, double>& got,
                       const std::string& what) {
  for (const auto& [k, _] : live)
    if (!got.count(k)) throw mismatch(what, "missing entry '" + k + "'");
  for (const auto& [k, _] : got)
    if (!live.count(k)) throw mismatch(what, "unexpected entry '" + k + "' (a different scheduler or group count?)");
}

}  // namespace

Checkpoint capture_training_state(const TrainingState& s) {
  Checkpoint c;
  if (s.model) c.model.tensors = std::map<std::string, Tensor>(s.model->state_dict());
  if (s.optimizer) c.optim.tensors = s.optimizer->flat_state();
  if (s.scheduler) c.scheduler.tensors = numbers_to_tensors(s.scheduler->state_dict());
  if (s.scaler) c.scaler.tensors = numbers_to_tensors(s.scaler->state_dict());
  c.capture_rng();
  c.step = s.step;
  c.epoch = s.epoch;
  c.user = s.user;
  return c;
}

void check_training_state(const Checkpoint& ck, const TrainingState& s) {
  if (s.model) {
    if (ck.model.tensors.empty()) throw mismatch("model", "the checkpoint holds no model");
    check_state_dict_match(std::map<std::string, Tensor>(s.model->state_dict()), ck.model.tensors, "model");
  }
  if (s.optimizer) {
    if (ck.optim.tensors.empty()) throw mismatch("optimizer", "the checkpoint holds no optimizer state");
    s.optimizer->check_flat_state(ck.optim.tensors);
  }
  if (s.scheduler) {
    if (ck.scheduler.tensors.empty()) throw mismatch("scheduler", "the checkpoint holds no scheduler state");
    check_number_keys(s.scheduler->state_dict(), tensors_to_numbers(ck.scheduler.tensors, "scheduler"), "scheduler");
  }
  if (s.scaler) {
    const auto live = s.scaler->state_dict();
    if (!live.empty()) {  // a disabled scaler saves and loads nothing
      if (ck.scaler.tensors.empty()) throw mismatch("scaler", "the checkpoint holds no GradScaler state");
      check_number_keys(live, tensors_to_numbers(ck.scaler.tensors, "scaler"), "scaler");
    }
  }
}

void restore_training_state(const Checkpoint& ck, TrainingState& s) {
  check_training_state(ck, s);
  // Everything fits: from here on nothing is expected to throw.
  if (s.model) s.model->load_state_dict(ck.model.tensors, /*strict=*/true);
  if (s.optimizer) s.optimizer->load_flat_state(ck.optim.tensors);
  if (s.scheduler) s.scheduler->load_state_dict(tensors_to_numbers(ck.scheduler.tensors, "scheduler"));
  if (s.scaler && !s.scaler->state_dict().empty())
    s.scaler->load_state_dict(tensors_to_numbers(ck.scaler.tensors, "scaler"));
  ck.restore_rng();
  s.step = ck.step;
  s.epoch = ck.epoch;
  s.user = ck.user;
}

void save_training_checkpoint(const std::string& path, const TrainingState& s) {
  save_checkpoint(path, capture_training_state(s));
}

Checkpoint load_training_checkpoint(const std::string& path, TrainingState& s, const Device& device) {
  Checkpoint ck = load_checkpoint(path, device);  // file-level problems throw here
  try {
    restore_training_state(ck, s);
  } catch (const Error& e) {
    throw Error(e.code(), path + ": " + e.what());
  }
  return ck;
}

}  // namespace genesis

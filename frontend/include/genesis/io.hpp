// genesis/io.hpp - safetensors files (HF's format, all dtypes incl. bf16) and
// training checkpoints stored in one safetensors file.
//
//   genesis::save_safetensors("model.safetensors", model.state_dict(), {{"format", "pt"}});
//   auto [tensors, meta] = genesis::load_safetensors("model.safetensors", genesis::Device("cuda"));
//
//   genesis::Checkpoint ck;
//   ck.model.tensors = model.state_dict();
//   ck.optim.tensors = opt_tensors; ck.optim.meta = opt_meta;   // plain maps
//   ck.step = step; ck.capture_rng();
//   genesis::save_checkpoint("ckpt.safetensors", ck);           // atomic
//   auto back = genesis::load_checkpoint("ckpt.safetensors");   // validated
//   back.restore_rng();
//
// Writes are atomic: a temp file in the target's directory is written, fsynced
// and renamed over the target, so the target is either the old or the new
// file.  Every file written here stores a CRC-32 of each tensor's bytes in its
// metadata ("genesis.crc32"); reads verify it when present (files without it,
// such as Hugging Face's, load as before), and validate the whole header before
// creating any tensor.  Every problem raises genesis::Error (GN_ERR_IO) naming
// the file (and, for a checksum mismatch, the tensor and its bytes).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "genesis/random.hpp"
#include "genesis/tensor.hpp"

namespace genesis {

/** Named tensors, ordered by name (a state dict). */
using TensorMap = std::map<std::string, Tensor>;
/** String metadata (safetensors "__metadata__"). */
using StringMap = std::map<std::string, std::string>;

/** What a safetensors file holds. */
struct SafetensorsFile {
  TensorMap tensors;   ///< name -> tensor
  StringMap metadata;  ///< "__metadata__" (empty when absent)
};

/** The safetensors dtype code ("F32", "BF16", "I64", "BOOL", ...) of a dtype. */
const char* safetensors_dtype(DType d);
/** The dtype of a safetensors code; throws genesis::Error for codes Genesis has no dtype for. */
DType dtype_from_safetensors(const std::string& code);

/** The complete file image (header + data) of tensors (any device, any strides) and metadata. */
std::string safetensors_serialize(const TensorMap& tensors, const StringMap& metadata = {});
/** Parses a file image; `name` is used in error messages. */
SafetensorsFile safetensors_deserialize(const std::string& bytes, const Device& device = Device(),
                                        const std::string& name = "<memory>");

/** Writes tensors and metadata to path as safetensors, atomically, with per-tensor checksums. */
void save_safetensors(const std::string& path, const TensorMap& tensors, const StringMap& metadata = {});
/** Reads a safetensors file onto device (validated, checksums verified when stored; clear errors; nothing partial). */
SafetensorsFile load_safetensors(const std::string& path, const Device& device = Device());
/** Only the "__metadata__" of a file (reads the header, not the data). */
StringMap load_safetensors_metadata(const std::string& path);
/** Most entries (tensors, plus "__metadata__") a safetensors header may hold; more is refused. */
size_t safetensors_max_tensors();

/** Saves a state dict as safetensors (torch.save for state dicts; metadata "format": "pt"). */
void save(const TensorMap& state_dict, const std::string& path);
/** Loads a state dict saved by save() or by HF's safetensors. */
TensorMap load(const std::string& path, const Device& device = Device());

/** Writes bytes to path atomically (temp file in the same directory, fsync, rename, fsync dir). */
void atomic_write_file(const std::string& path, const std::string& bytes);

// ------------------------------------------------------------- checkpoints

/** One part of a checkpoint: tensors plus string metadata (values are often JSON). */
struct CheckpointSection {
  TensorMap tensors;  ///< stored as "<section>.<name>"
  StringMap meta;     ///< stored in the file's JSON metadata
  /** True when it holds nothing. */
  bool empty() const { return tensors.empty() && meta.empty(); }
};

/** A full training checkpoint; every part is optional. */
struct Checkpoint {
  CheckpointSection model;                         ///< model.state_dict()                   -> "model.*"
  CheckpointSection optim;                         ///< optimizer flat state + param groups  -> "optim.*"
  CheckpointSection scheduler;                     ///< LR scheduler state                   -> "scheduler.*"
  CheckpointSection scaler;                        ///< GradScaler state                     -> "scaler.*"
  std::map<std::string, CheckpointSection> extra;  ///< further sections by name ([A-Za-z0-9_-]+)
  std::vector<RngState> rng;                       ///< default-generator states of every device
  std::map<std::string, RngState> generators;      ///< named private generators (e.g. the data loader's)
  int64_t step = 0;                                ///< optimizer steps taken
  int64_t epoch = 0;                               ///< epochs completed
  StringMap user;                                  ///< anything else

  /** Stores the states of every device's default generator in rng. */
  void capture_rng();
  /** Restores rng onto the default generators (devices absent now are skipped). */
  void restore_rng() const;
  /** The named section ("model", "optim", "scheduler", "scaler" or an extra one), created if absent. */
  CheckpointSection& section(const std::string& name);
  /** The named section; throws genesis::Error when there is none. */
  const CheckpointSection& section(const std::string& name) const;
};

/** Format tag stored in the metadata under "genesis.checkpoint". */
inline constexpr const char* kCheckpointFormat = "genesis.checkpoint/1";

/** Writes a checkpoint into one safetensors file, atomically. */
void save_checkpoint(const std::string& path, const Checkpoint& ckpt);
/** Reads a checkpoint (tensors on device), checking it against its own manifest. */
Checkpoint load_checkpoint(const std::string& path, const Device& device = Device());

/** Throws genesis::Error listing missing/unexpected keys and shape or dtype mismatches of `got` against `expected`. */
void check_state_dict_match(const TensorMap& expected, const TensorMap& got, const std::string& what,
                            bool strict = true);

// ------------------------------------------------- whole training states

namespace nn {
class Module;
}
namespace optim {
class Optimizer;
class LRScheduler;
}  // namespace optim
namespace amp {
class GradScaler;
}

/** What a training run saves and resumes; null parts are skipped.
 *
 *   genesis::TrainingState st{&model, &optimizer, &scheduler, &scaler};
 *   st.step = step; st.epoch = epoch + 1;
 *   genesis::save_training_checkpoint("run.ckpt.safetensors", st);     // atomic
 *   ...
 *   genesis::load_training_checkpoint("run.ckpt.safetensors", st);     // all or nothing
 */
struct TrainingState {
  nn::Module* model = nullptr;              ///< -> section "model" (state_dict)
  optim::Optimizer* optimizer = nullptr;    ///< -> section "optim" (flat_state)
  optim::LRScheduler* scheduler = nullptr;  ///< -> section "scheduler" (numbers as float64 scalars)
  amp::GradScaler* scaler = nullptr;        ///< -> section "scaler" (numbers as float64 scalars)
  int64_t step = 0;                         ///< optimizer steps taken
  int64_t epoch = 0;                        ///< epochs completed
  StringMap user;                           ///< anything else (strings)
};

/** A checkpoint of every part of s plus the default generators' states. */
Checkpoint capture_training_state(const TrainingState& s);
/** Checks that every part of ck fits s (keys, shapes, dtypes, group counts) and throws a
 * genesis::Error naming the first mismatch; changes nothing. */
void check_training_state(const Checkpoint& ck, const TrainingState& s);
/** check_training_state, then loads every part into s and restores the RNG states, step,
 * epoch and user: either everything is restored or (on error) nothing is. */
void restore_training_state(const Checkpoint& ck, TrainingState& s);
/** capture_training_state written atomically (temp file, fsync, rename). */
void save_training_checkpoint(const std::string& path, const TrainingState& s);
/** Reads path and restores it into s (all or nothing); returns the checkpoint (extra sections...).
 * Truncated, corrupted or mismatched files throw genesis::Error and change nothing. */
Checkpoint load_training_checkpoint(const std::string& path, TrainingState& s, const Device& device = Device());

}  // namespace genesis

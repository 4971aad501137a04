// device.cpp - the commands built on the C++ frontend: its runtime (init_frontend) and the one
// reading of --device and --dtype that every such command uses (generate, chat, convert, bench
// llm, train-sft, eval-chat, bench train).
#include <CLI/CLI.hpp>

#include "cli.h"
#include "genesis/distributed.hpp"

namespace genesis::cli {

void init_frontend(const GlobalOptions& g) {
  genesis::init({.plugin_path = g.plugin_path,
                 .plugins = g.has_plugins ? g.plugins : std::string(),
                 .backends = g.backends,
                 .no_default_paths = g.no_default_paths,
                 .quiet = g.quiet});
}

void add_device_options(CLI::App& cmd, DeviceFlags& f, const char* device_help, const char* dtype_help) {
  cmd.add_option("--device", f.device, device_help);
  if (dtype_help) cmd.add_option("--dtype", f.dtype, dtype_help);
}

Device pick_device(const DeviceFlags& f, const std::string& fallback) {
  std::string spec = f.device.empty() ? fallback : f.device;
  if (spec.empty()) spec = cuda_available() ? "cuda" : "cpu";
  return distributed::local_device(spec);  // "cuda" under `genesis launch`: cuda:$LOCAL_RANK
}

std::optional<DType> pick_dtype(const DeviceFlags& f) {
  if (f.dtype.empty()) return std::nullopt;
  const std::optional<DType> d = dtype_from_name(f.dtype);
  if (d == DType::f32 || d == DType::bf16 || d == DType::f16) return d;
  throw Error(GN_ERR_INVALID_ARGUMENT,
              "--dtype must be float32 (f32, fp32, float), bfloat16 (bf16) or float16 "
              "(f16, fp16, half), got '" +
                  f.dtype + "'");
}

}  // namespace genesis::cli

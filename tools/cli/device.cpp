// device.cpp - the commands built on the C++ frontend: its runtime (init_frontend) and the one
// reading of --device and --dtype that every such command uses (generate, chat, convert, bench
// llm, train-sft, eval-chat, bench train).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>

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

std::optional<DType> float_dtype_from_name(std::string name) {
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const std::optional<DType> d = dtype_from_name(name);
  if (d == DType::f32 || d == DType::bf16 || d == DType::f16) return d;
  return std::nullopt;
}

void add_device_options(CLI::App& cmd, DeviceFlags& f, const char* device_help, const char* dtype_help) {
  cmd.add_option("--device", f.device, device_help);
  if (!dtype_help) return;
  cmd.add_option("--dtype", f.dtype, dtype_help)
      ->transform(CLI::Validator(
          [](std::string& v) {
            const std::optional<DType> d = float_dtype_from_name(v);
            if (!d) return "must be " + std::string(kDtypeNames) + ", got '" + v + "'";
            v = dtype_name(*d);
            return std::string();
          },
          "DTYPE"));
}

void add_autocast_option(CLI::App& cmd, std::string& autocast, const char* help) {
  cmd.add_option("--autocast", autocast, help)
      ->default_str("none")
      ->transform(CLI::Validator(
          [](std::string& v) {
            std::string lower = v;
            for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            const std::optional<DType> d = lower == "none" || lower.empty() ? DType::f32 : float_dtype_from_name(v);
            if (!d) return "must be none or a dtype: " + std::string(kDtypeNames) + ", got '" + v + "'";
            v = *d == DType::bf16 ? "bf16" : *d == DType::f16 ? "fp16" : "";
            return std::string();
          },
          "none|DTYPE"));
}

CLI::Option* existing_folder(CLI::Option* opt) {
  return opt->check(CLI::Validator(
      [](std::string& v) {
        std::error_code ec;
        if (std::filesystem::is_directory(v, ec)) return std::string();
        if (std::filesystem::exists(v, ec)) return "'" + v + "' is a file, not a folder";
        return "folder '" + v + "' does not exist";
      },
      "DIR"));
}

models::QwenConfig config_from_name_or_file(const std::string& what) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(what, ec)) {
    if (!fs::exists(fs::path(what) / "config.json", ec))
      throw Error(GN_ERR_NOT_FOUND, "--config: folder '" + what + "' has no config.json");
    return models::QwenConfig::from_file((fs::path(what) / "config.json").string());
  }
  if (fs::exists(what, ec)) return models::QwenConfig::from_file(what);
  const std::vector<std::string> names = models::QwenConfig::preset_names();
  if (std::find(names.begin(), names.end(), what) != names.end()) return models::QwenConfig::preset(what);
  std::string known;
  for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
  throw Error(
      GN_ERR_NOT_FOUND,
      "--config: '" + what + "' is neither a config.json file, a model folder nor a named shape (" + known + ")");
}

Device pick_device(const DeviceFlags& f, const std::string& fallback) {
  std::string spec = f.device.empty() ? fallback : f.device;
  if (spec.empty()) spec = cuda_available() ? "cuda" : "cpu";
  return distributed::local_device(spec);  // "cuda" under `genesis launch`: cuda:$LOCAL_RANK
}

std::optional<DType> pick_dtype(const DeviceFlags& f) {
  if (f.dtype.empty()) return std::nullopt;
  if (const std::optional<DType> d = float_dtype_from_name(f.dtype)) return d;
  throw Error(GN_ERR_INVALID_ARGUMENT, "--dtype must be " + std::string(kDtypeNames) + ", got '" + f.dtype + "'");
}

}  // namespace genesis::cli

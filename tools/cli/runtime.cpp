// runtime.cpp - runtime creation and plugin search-path reporting for the CLI.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "cli.h"

namespace genesis::cli {

bool create_runtime(const GlobalOptions& opts, Runtime& rt) {
  gn_runtime_options o{};
  o.struct_size = sizeof o;
  if (opts.quiet) o.flags |= GN_RUNTIME_QUIET;
  if (opts.no_default_paths) o.flags |= GN_RUNTIME_NO_DEFAULT_PATHS;
  o.plugin_path = opts.plugin_path.empty() ? nullptr : opts.plugin_path.c_str();
  o.plugins = opts.has_plugins ? opts.plugins.c_str() : nullptr;
  o.backends = opts.backends.empty() ? nullptr : opts.backends.c_str();
  gn_status* st = gn_runtime_create(&o, rt.out());
  if (!st) return true;
  std::fprintf(stderr, "genesis: cannot create a runtime: %s\n", gn_status_message(st));
  gn_status_free(st);
  return false;
}

namespace {

// Append the non-empty entries of a colon-separated list.
void add_dirs(std::vector<SearchDir>& out, const std::string& list, const char* source) {
  std::stringstream ss(list);
  for (std::string dir; std::getline(ss, dir, ':');)
    if (!dir.empty()) out.push_back({dir, source});
}

}  // namespace

// Mirrors the loader's documented order (genesis/runtime.h): options, then
// $GENESIS_PLUGIN_PATH, then <dir of libgenesis>/genesis/plugins.
std::vector<SearchDir> plugin_search_dirs(const GlobalOptions& opts) {
  std::vector<SearchDir> dirs;
  add_dirs(dirs, opts.plugin_path, "--plugin-path");
  if (!opts.no_default_paths) {
    if (const char* env = std::getenv("GENESIS_PLUGIN_PATH")) add_dirs(dirs, env, "$GENESIS_PLUGIN_PATH");
    const std::string lib = library_path();
    if (!lib.empty())
      dirs.push_back({(std::filesystem::path(lib).parent_path() / "genesis" / "plugins").string(), "default"});
  }
  return dirs;
}

std::string library_path() {
  Dl_info info{};
  // Any symbol of libgenesis tells where the library was loaded from.
  if (!dladdr(reinterpret_cast<void*>(&gn_version_string), &info) || !info.dli_fname) return "";
  std::error_code ec;  // "bin/../lib/x" reads better as "lib/x"; keep the raw name on error
  const std::filesystem::path p = std::filesystem::weakly_canonical(info.dli_fname, ec);
  return ec ? std::string(info.dli_fname) : p.string();
}

}  // namespace genesis::cli

// info.cpp - `genesis info`: what this installation can do, from the C API.
//
// Prints the ABI and library versions, the plugin search path, every plugin
// the runtime saw (loaded, or rejected and why), device types with their
// providers and devices, and every op with the backends and dtypes that
// implement it.  Always exits 0 once a runtime exists: a missing or broken
// plugin is something to report, not a failure of the tool.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli.h"

namespace genesis::cli {
namespace {

// Short dtype names for compact kernel lists ("f32 f16 bf16 ...").
const char* short_dtype(int32_t dtype) {
  switch (dtype) {
    case GN_F32: return "f32";
    case GN_F16: return "f16";
    case GN_BF16: return "bf16";
    case GN_F64: return "f64";
    case GN_I8: return "i8";
    case GN_U8: return "u8";
    case GN_I32: return "i32";
    case GN_I64: return "i64";
    case GN_BOOL: return "bool";
    case GN_DTYPE_ANY: return "any";
    default: return "?";
  }
}

// "80.0 GiB", "512.0 MiB", or "unknown" for 0.
std::string human_bytes(uint64_t bytes) {
  if (bytes == 0) return "unknown";
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

std::string str(const char* s) { return s ? s : ""; }

// Take the status message and free it.
std::string take_message(gn_status* st) {
  std::string m = gn_status_message(st);
  gn_status_free(st);
  return m;
}

void print_versions() {
  uint32_t major = 0, minor = 0;
  gn_abi_version(&major, &minor);
  std::printf("Genesis %s\n", gn_version_string());
  std::printf("  ABI:      %u.%u (plugins need major %u; minors are negotiated)\n", major, minor, major);
  const std::string lib = library_path();
  std::printf("  library:  %s\n", lib.empty() ? "(unknown)" : lib.c_str());
}

void print_search_path(const GlobalOptions& opts) {
  std::printf("\nPlugin search path (first match of a file name wins):\n");
  const std::vector<SearchDir> dirs = plugin_search_dirs(opts);
  if (dirs.empty()) std::printf("  (none)\n");
  for (const SearchDir& d : dirs) {
    std::error_code ec;
    const bool exists = std::filesystem::is_directory(d.path, ec);
    std::printf("  %s  [%s]%s\n", d.path.c_str(), d.source.c_str(), exists ? "" : "  (not a directory)");
  }
  if (opts.has_plugins)
    std::printf("  only plugins named: %s\n", opts.plugins.c_str());
  else if (const char* env = std::getenv("GENESIS_PLUGINS"))
    std::printf("  only plugins named: %s  [$GENESIS_PLUGINS]\n", env);
}

// Returns the number of loaded plugins; `filtered`: an allow-list was in force.
size_t print_plugins(const gn_runtime* rt, bool filtered) {
  const size_t n = gn_runtime_plugin_count(rt);
  size_t loaded = 0;
  std::vector<gn_plugin_record> records;
  for (size_t i = 0; i < n; ++i) {
    gn_plugin_record r{};
    r.struct_size = sizeof r;
    if (gn_status* st = gn_runtime_plugin_get(rt, i, &r)) {
      std::printf("  (record %zu unreadable: %s)\n", i, take_message(st).c_str());
      continue;
    }
    loaded += r.loaded != 0;
    records.push_back(r);
  }
  std::printf("\nPlugins (%zu found, %zu loaded, %zu rejected):\n", records.size(), loaded, records.size() - loaded);
  for (const gn_plugin_record& r : records) {
    // A plugin rejected before init has no name yet: show its file name.
    const std::string name = str(r.name).empty() ? std::filesystem::path(str(r.path)).filename().string()
                                                 : str(r.name) + " " + (str(r.version).empty() ? "-" : r.version);
    if (r.loaded)
      std::printf("  %s: loaded\n", name.c_str());
    else
      std::printf("  %s: REJECTED: %s\n", name.c_str(), str(r.error).c_str());
    std::printf("      path:  %s\n", str(r.path).c_str());
    // Major 0 is also what a plugin claims when it forgets to set it: only a
    // plugin without a name (its init never ran) has an unknown ABI.
    if (r.abi_major == 0 && str(r.name).empty())
      std::printf("      ABI:   unknown (rejected before init)\n");
    else if (r.loaded)
      std::printf("      ABI:   %u.%u claimed, %u.%u negotiated\n", r.abi_major, r.abi_minor, r.abi_major,
                  r.negotiated_minor);
    else
      std::printf("      ABI:   %u.%u claimed\n", r.abi_major, r.abi_minor);
    if (!str(r.description).empty()) std::printf("      about: %s\n", r.description);
  }
  if (records.empty()) {
    std::printf(
        "  No plugin was found%s.  Without one there are no kernels: ops cannot run.\n"
        "  Build the reference plugin (libgenesis_plugin_reference.so) or put a directory\n"
        "  holding libgenesis_plugin_<name>.so files on GENESIS_PLUGIN_PATH or --plugin-path.\n",
        filtered ? " (or none matched the plugin names asked for)" : "");
  } else if (loaded == 0) {
    std::printf("  No plugin could be loaded (reasons above): ops cannot run.\n");
  }
  return loaded;
}

void print_device_types(gn_runtime* rt) {
  const size_t n = gn_device_type_count(rt);
  std::printf("\nDevice types (%zu):\n", n);
  if (n == 0) std::printf("  (none: no plugin provides a device type)\n");
  for (size_t i = 0; i < n; ++i) {
    gn_device_type_record t{};
    t.struct_size = sizeof t;
    if (gn_status* st = gn_device_type_get(rt, i, &t)) {
      std::printf("  (device type %zu unreadable: %s)\n", i, take_message(st).c_str());
      continue;
    }
    if (str(t.backend).empty()) {
      // Named only by kernels (e.g. an op plugin's cpu kernels): nothing serves it.
      std::printf("  %-8s no provider: no loaded plugin provides this device type\n", str(t.name).c_str());
      continue;
    }
    std::printf("  %-8s served by %s (score %d; providers: %s)\n", str(t.name).c_str(), t.backend, t.score,
                str(t.providers).empty() ? "-" : t.providers);
    if (t.device_count == 0) {
      std::printf("           0 devices: %s\n", str(t.note).empty() ? "the backend reports none" : t.note);
      continue;
    }
    std::printf("           %d device%s\n", t.device_count, t.device_count == 1 ? "" : "s");
    for (int32_t d = 0; d < t.device_count; ++d) {
      gn_device dev{t.id, d};
      char spec[64];
      gn_device_format(rt, dev, spec, sizeof spec);
      gn_device_props p{};
      p.struct_size = sizeof p;
      if (gn_status* st = gn_device_properties(rt, dev, &p)) {
        std::printf("           %-8s (properties unavailable: %s)\n", spec, take_message(st).c_str());
        continue;
      }
      std::printf("           %-8s %s, memory %s\n", spec, p.name, human_bytes(p.total_memory).c_str());
    }
  }
}

// "reference: f32 f16 ...; cpu: f32" for one op, backends in first-seen order.
std::string kernel_summary(const gn_op* op) {
  struct Group {
    std::vector<std::string> device_types;
    std::vector<int32_t> dtypes;
  };
  std::vector<std::string> order;
  std::map<std::string, Group> groups;
  for (size_t i = 0; i < gn_op_kernel_count(op); ++i) {
    gn_kernel_record k{};
    k.struct_size = sizeof k;
    if (gn_status* st = gn_op_kernel_get(op, i, &k)) {
      gn_status_free(st);
      continue;
    }
    const std::string backend = str(k.backend);
    if (!groups.count(backend)) order.push_back(backend);
    Group& g = groups[backend];
    if (std::find(g.device_types.begin(), g.device_types.end(), str(k.device_type)) == g.device_types.end())
      g.device_types.push_back(str(k.device_type));
    if (std::find(g.dtypes.begin(), g.dtypes.end(), k.dtype) == g.dtypes.end()) g.dtypes.push_back(k.dtype);
  }
  std::string out;
  for (const std::string& backend : order) {
    Group& g = groups[backend];
    std::sort(g.dtypes.begin(), g.dtypes.end());  // GN_DTYPE_ANY (-1) first, then enum order
    if (!out.empty()) out += "; ";
    out += backend;
    // Only name the device types when a backend serves this op on several.
    if (g.device_types.size() > 1) {
      out += " (";
      for (size_t i = 0; i < g.device_types.size(); ++i) out += (i ? "," : "") + g.device_types[i];
      out += ")";
    }
    out += ":";
    for (int32_t d : g.dtypes) out += std::string(" ") + short_dtype(d);
  }
  return out;
}

void print_ops(gn_runtime* rt) {
  const size_t n = gn_op_count(rt);
  size_t name_width = 4, origin_width = 6;  // at least the header words
  for (size_t i = 0; i < n; ++i) {
    const gn_op* op = gn_op_at(rt, i);
    name_width = std::max(name_width, std::string(gn_op_name(op)).size());
    origin_width = std::max(origin_width, str(gn_op_origin(op)).size());
  }
  std::printf("\nOps (%zu):\n", n);
  std::printf("  %-*s  %-*s  %s\n", static_cast<int>(name_width), "name", static_cast<int>(origin_width), "origin",
              "kernels (backend: dtypes)");
  for (size_t i = 0; i < n; ++i) {
    const gn_op* op = gn_op_at(rt, i);
    const gn_op_schema* schema = gn_op_get_schema(op);
    std::string kernels = kernel_summary(op);
    if (kernels.empty())
      kernels = (schema && (schema->flags & GN_OP_VIEW)) ? "(view op: computed by the core)" : "(no kernels)";
    std::printf("  %-*s  %-*s  %s\n", static_cast<int>(name_width), gn_op_name(op), static_cast<int>(origin_width),
                str(gn_op_origin(op)).c_str(), kernels.c_str());
  }
}

struct InfoOptions {
  bool no_ops = false;  // versions, plugins and devices only
};

int run_info(const GlobalOptions& opts, InfoOptions& o) {
  print_versions();
  print_search_path(opts);
  std::fflush(stdout);  // keep our text ahead of the loader's stderr notes
  Runtime rt;
  if (!create_runtime(opts, rt)) return 1;
  print_plugins(rt.get(), opts.has_plugins || std::getenv("GENESIS_PLUGINS"));
  print_device_types(rt.get());
  if (!o.no_ops) print_ops(rt.get());
  return 0;
}

}  // namespace

CommandRun setup_info(CLI::App& cmd) {
  // Let the global options also follow the subcommand: `genesis info --quiet`.
  cmd.fallthrough();
  auto o = std::make_shared<InfoOptions>();
  cmd.add_flag("--no-ops", o->no_ops, "leave out the op table (versions, plugins and devices only)");
  return bind_command(o, run_info);
}

}  // namespace genesis::cli

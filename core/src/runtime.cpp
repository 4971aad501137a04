// core/src/runtime.cpp - runtime lifetime, device types, kernel tables.
#include "runtime.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <cstdlib>

namespace genesis::core {

void runtime_retain(gn_runtime* rt) { rt->refs.fetch_add(1, std::memory_order_relaxed); }

void runtime_release(gn_runtime* rt) {
  if (rt->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  // Plugins shut down in reverse load order, then their libraries unload.
  for (auto it = rt->plugins.rbegin(); it != rt->plugins.rend(); ++it)
    if (it->loaded && it->shutdown) it->shutdown(it->ctx);
  for (auto& dt : rt->device_types)
    for (auto& d : dt.devices)
      if (d->current) retire(d->current);
  std::vector<std::shared_ptr<void>> libs;
  for (auto& p : rt->plugins) {
    host_link_detach(p.host_link);
    libs.push_back(std::move(p.library));
  }
  retire(rt);
  libs.clear();
}

int device_type_intern(gn_runtime* rt, const std::string& name) {
  for (size_t i = 0; i < rt->device_types.size(); ++i)
    if (rt->device_types[i].name == name) return (int)i;
  rt->device_types.emplace_back();
  rt->device_types.back().name = name;
  if (name == "cpu") rt->cpu_type = (int)rt->device_types.size() - 1;
  return (int)rt->device_types.size() - 1;
}

std::string device_str(const gn_runtime* rt, gn_device dev) {
  if (dev.type < 0 || dev.type >= (int)rt->device_types.size())
    return "<invalid device type " + std::to_string(dev.type) + ">";
  return rt->device_types[dev.type].name + ":" + std::to_string(dev.index);
}

DeviceType& device_type_of(gn_runtime* rt, gn_device dev, const char* what) {
  // Not require_non_null: tensors keep a destroyed runtime alive and usable,
  // and they reach it through here; only a runtime that is gone is misuse.
  if (!rt) fail(GN_ERR_INVALID_ARGUMENT, std::string(what) + ": rt is NULL");
  check_live(rt, kRuntimeMagic, what, "runtime");
  if (dev.type < 0 || dev.type >= (int)rt->device_types.size())
    fail(GN_ERR_DEVICE, std::string(what) + ": invalid device type id " + std::to_string(dev.type));
  DeviceType& dt = rt->device_types[dev.type];
  if (!dt.vt) fail(GN_ERR_DEVICE, std::string(what) + ": no loaded plugin provides device type '" + dt.name + "'");
  if (dev.index < 0 || dev.index >= dt.count)
    fail(GN_ERR_DEVICE, std::string(what) + ": device " + device_str(rt, dev) + " does not exist (" +
                            std::to_string(dt.count) + " " + dt.name + " device(s)" +
                            (dt.note.empty() ? "" : ": " + dt.note) + ")");
  return dt;
}

DeviceState& device_state(gn_runtime* rt, gn_device dev) { return *rt->device_types[dev.type].devices[dev.index]; }

void* current_stream(gn_runtime* rt, gn_device dev) {
  gn_stream* s = rt->device_types[dev.type].devices[dev.index]->current;
  return s ? s->native : nullptr;
}

gn_device default_device(gn_runtime* rt) {
  if (rt->cpu_type < 0 || !rt->device_types[rt->cpu_type].vt)
    fail(GN_ERR_DEVICE, "no plugin provides device type 'cpu' (the default device); check `genesis info`");
  return gn_device{rt->cpu_type, 0};
}

const std::string& plugin_name(const gn_runtime* rt, int plugin) {
  static const std::string core = "core";
  return plugin < 0 ? core : rt->plugins[plugin].name;
}

// Host memory served by the core itself, so a runtime with zero plugins can
// still hold "cpu" tensors (import/export, copies).  Score 0: any backend
// providing "cpu" outranks it; it has no kernels.
namespace core_host {
std::atomic<uint64_t> allocated{0}, peak{0}, n_alloc{0}, n_free{0};
gn_status* count(void*, int32_t* n) {
  *n = 1;
  return nullptr;
}
gn_status* props(void*, int32_t, gn_device_props* p) {
  std::snprintf(p->name, sizeof p->name, "host (core, no kernels)");
  return nullptr;
}
gn_status* alloc(void*, int32_t, size_t bytes, void*, void** ptr) {
  size_t total = ((bytes + 63) / 64) * 64 + 64;
  void* raw = std::aligned_alloc(64, total);
  if (!raw) return make_status(GN_ERR_OUT_OF_MEMORY, "host allocation of " + std::to_string(bytes) + " bytes failed");
  *(size_t*)raw = bytes;
  *ptr = (char*)raw + 64;
  uint64_t now = allocated += bytes;
  uint64_t p = peak.load();
  while (now > p && !peak.compare_exchange_weak(p, now)) {
  }
  n_alloc++;
  return nullptr;
}
gn_status* release(void*, int32_t, void* ptr, void*) {
  if (!ptr) return nullptr;
  char* raw = (char*)ptr - 64;
  allocated -= *(size_t*)raw;
  n_free++;
  std::free(raw);
  return nullptr;
}
gn_status* stats(void*, int32_t, gn_memory_stats* s) {
  s->allocated = s->reserved = allocated.load();
  s->peak_allocated = s->peak_reserved = peak.load();
  s->num_allocs = n_alloc.load();
  s->num_frees = n_free.load();
  s->active_blocks = s->num_allocs - s->num_frees;
  return nullptr;
}
gn_status* copy(void*, int32_t, void* dst, const void* src, size_t bytes, int32_t, void*) {
  std::memmove(dst, src, bytes);
  return nullptr;
}
gn_status* set(void*, int32_t, void* dst, int32_t v, size_t bytes, void*) {
  std::memset(dst, v, bytes);
  return nullptr;
}
}  // namespace core_host

void register_core_host(gn_runtime* rt) {
  gn_device_vtable vt{};
  vt.struct_size = sizeof(vt);
  vt.name = "cpu";
  vt.score = 0;
  vt.flags = GN_DEVICE_HOST_MEMORY;
  vt.device_count = core_host::count;
  vt.device_props = core_host::props;
  vt.alloc = core_host::alloc;
  vt.free = core_host::release;
  vt.memory_stats = core_host::stats;
  vt.copy = core_host::copy;
  vt.memset = core_host::set;
  int t = device_type_intern(rt, "cpu");
  rt->device_types[t].providers.push_back({kNoPlugin, vt});
}

// Rank of a plugin's kernels for a device type: the serving provider first,
// then plugins that do not provide the type (op plugins), then the other
// providers by score.
static int kernel_rank(const DeviceType& dt, int plugin) {
  if (plugin == dt.serving_plugin) return 0;
  for (size_t i = 0; i < dt.providers.size(); ++i)
    if (dt.providers[i].plugin == plugin) return 2 + (int)i;
  return 1;
}

void rebuild_dispatch(gn_runtime* rt) {
  // Choose each type's serving provider: named in options.backends, else best score.
  for (auto& dt : rt->device_types) {
    std::stable_sort(dt.providers.begin(), dt.providers.end(),
                     [](const DeviceProvider& a, const DeviceProvider& b) { return a.vt.score > b.vt.score; });
    auto want = rt->backends.find(dt.name);
    if (want != rt->backends.end()) {
      auto it = std::find_if(dt.providers.begin(), dt.providers.end(),
                             [&](const DeviceProvider& p) { return plugin_name(rt, p.plugin) == want->second; });
      if (it != dt.providers.end()) std::rotate(dt.providers.begin(), it, it + 1);
    }
    int serving = dt.providers.empty() ? kNoPlugin : dt.providers.front().plugin;
    dt.vt = dt.providers.empty() ? nullptr : &dt.providers.front().vt;  // the vector may have moved
    if (serving != dt.serving_plugin) {
      dt.serving_plugin = serving;
      dt.count = 0;
      dt.note.clear();
      if (dt.vt) {
        int32_t n = 0;
        gn_status* st = dt.vt->device_count(dt.vt->ctx, &n);
        if (st) {
          dt.note = st->msg;
          delete st;
          n = 0;
        } else if (n == 0) {
          dt.note = "the backend found no devices";
        }
        dt.count = n;
      } else {
        dt.note = "no loaded plugin provides it";
      }
      while ((int)dt.devices.size() < dt.count) dt.devices.push_back(std::make_unique<DeviceState>());
    }
  }
  const size_t n_types = rt->device_types.size();
  for (auto& op : rt->ops) {
    op->table.assign(n_types * GN_DTYPE_COUNT, {});
    std::vector<uint16_t> order(op->kernels.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = (uint16_t)i;
    std::stable_sort(order.begin(), order.end(), [&](uint16_t a, uint16_t b) {
      const Kernel& ka = op->kernels[a];
      const Kernel& kb = op->kernels[b];
      const DeviceType& dt = rt->device_types[ka.device_type];
      int ra = kernel_rank(dt, ka.plugin), rb = kernel_rank(rt->device_types[kb.device_type], kb.plugin);
      if (ra != rb) return ra < rb;
      return (ka.dtype == GN_DTYPE_ANY) < (kb.dtype == GN_DTYPE_ANY);
    });
    for (uint16_t ki : order) {
      const Kernel& k = op->kernels[ki];
      for (int d = 0; d < GN_DTYPE_COUNT; ++d)
        if (k.dtype == GN_DTYPE_ANY || k.dtype == d) op->table[k.device_type * GN_DTYPE_COUNT + d].push_back(ki);
    }
  }
}

std::vector<std::string> split_list(const char* s, char sep) {
  std::vector<std::string> out;
  if (!s) return out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep))
    if (!cur.empty()) out.push_back(cur);
  return out;
}

// Every options.backends entry must name a device type and a loaded plugin
// that provides it: a typo would otherwise silently leave the default backend.
static void check_backends(gn_runtime* rt) {
  for (const auto& entry : rt->backends) {
    const std::string& type = entry.first;  // not a structured binding: captured below
    const std::string& plugin = entry.second;
    auto dt = std::find_if(rt->device_types.begin(), rt->device_types.end(),
                           [&](const DeviceType& d) { return d.name == type; });
    const std::string head = "gn_runtime_create: backends names plugin '" + plugin + "' for device type '" + type + "'";
    if (dt == rt->device_types.end() || dt->providers.empty()) {
      std::string known;
      for (const auto& d : rt->device_types)
        if (!d.providers.empty()) known += (known.empty() ? "" : ", ") + d.name;
      fail(GN_ERR_NOT_FOUND, head + ", but no loaded plugin provides '" + type + "' (device types: " + known + ")");
    }
    std::string providers;
    bool found = false;
    for (const auto& p : dt->providers) {
      found = found || plugin_name(rt, p.plugin) == plugin;
      providers += (providers.empty() ? "" : ", ") + plugin_name(rt, p.plugin);
    }
    if (!found)
      fail(GN_ERR_NOT_FOUND, head + ", but no loaded plugin named '" + plugin +
                                 "' provides it (providers: " + providers + "; see `genesis info`)");
  }
}

namespace {

// *out = v as far as out->struct_size reaches (0: all of it): a caller built for an
// older minor gets the fields it knows.
template <class T>
void copy_out(const T& v, T* out) {
  std::memcpy(out, &v, std::min(out->struct_size ? out->struct_size : sizeof(v), sizeof(v)));
}

// GN_ERR_INDEX "<fn>: index i is out of range for n <what>" unless i < n.
void check_index(const char* fn, size_t i, size_t n, const char* what) {
  if (i >= n)
    fail(GN_ERR_INDEX,
         std::string(fn) + ": index " + std::to_string(i) + " is out of range for " + std::to_string(n) + " " + what);
}

// gn_device_properties and gn_memory_stats_get: a T filled by the device's `query`
// slot (left zeroed without one), copied into *out as far as out->struct_size
// reaches (0: all of it).  `required` are the pointer arguments checked first.
template <class T, class Query>
gn_status* query_sized(gn_runtime* rt, gn_device dev, T* out, const char* fn,
                       std::initializer_list<std::pair<const char*, const void*>> required,
                       Query gn_device_vtable::*query) {
  return guarded([&] {
    require_non_null(fn, required);
    DeviceType& dt = device_type_of(rt, dev, fn);
    T v{};
    v.struct_size = sizeof(v);
    if (dt.vt->*query) throw_if((dt.vt->*query)(dt.vt->ctx, dev.index, &v));
    copy_out(v, out);
  });
}

}  // namespace

}  // namespace genesis::core

using namespace genesis::core;

extern "C" {

void gn_abi_version(uint32_t* major, uint32_t* minor) {
  if (major) *major = GN_ABI_VERSION_MAJOR;
  if (minor) *minor = GN_ABI_VERSION_MINOR;
}

const char* gn_version_string(void) { return GENESIS_VERSION_STRING; }

gn_status* gn_runtime_create(const gn_runtime_options* options, gn_runtime** out) {
  return guarded([&] {
    require_non_null("gn_runtime_create", {{"out", out}});
    *out = nullptr;
    gn_runtime_options o{};
    if (options) std::memcpy(&o, options, std::min(options->struct_size, sizeof(o)));
    auto rt = std::make_unique<gn_runtime>();
    rt->flags = o.flags;
    for (size_t i = 0; i < o.n_options; ++i)
      if (o.option_keys && o.option_values && o.option_keys[i] && o.option_values[i])
        rt->options[o.option_keys[i]] = std::make_shared<const std::string>(o.option_values[i]);
    for (const auto& kv : split_list(o.backends, ',')) {
      auto eq = kv.find('=');
      if (eq == std::string::npos)
        fail(GN_ERR_INVALID_ARGUMENT, "gn_runtime_create: backends entry '" + kv + "' is not type=plugin");
      rt->backends[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    register_builtin_ops(rt.get());
    register_core_host(rt.get());
    gn_runtime* raw = rt.release();
    try {
      if (!(o.flags & GN_RUNTIME_NO_PLUGINS)) {
        load_plugins(raw, &o);
        check_backends(raw);
      }
      rebuild_dispatch(raw);
    } catch (...) {
      runtime_release(raw);  // shuts down the plugins loaded so far
      throw;
    }
    *out = raw;
  });
}

void gn_runtime_destroy(gn_runtime* rt) {
  if (!rt) return;
  check_live(rt, kRuntimeMagic, "gn_runtime_destroy", "runtime");
  if (rt->destroyed) {
    if (checked_mode()) checked_abort("gn_runtime_destroy", "runtime", rt, "was destroyed twice");
    return;
  }
  rt->destroyed = true;
  runtime_release(rt);
}

gn_status* gn_runtime_load_plugin(gn_runtime* rt, const char* path) {
  return guarded([&] {
    require_non_null("gn_runtime_load_plugin", {{"rt", rt}, {"path", path}});
    std::lock_guard<std::mutex> lock(rt->mu);
    load_plugin_file(rt, path);
  });
}

gn_status* gn_runtime_set_option(gn_runtime* rt, const char* key, const char* value) {
  gn_status* plugin_error = nullptr;
  gn_status* st = guarded([&] {
    require_non_null("gn_runtime_set_option", {{"rt", rt}, {"key", key}});
    if (!*key) fail(GN_ERR_INVALID_ARGUMENT, "gn_runtime_set_option: empty key");
    {
      std::lock_guard<std::mutex> lock(rt->options_mu);
      auto it = rt->options.find(key);
      if (it != rt->options.end()) rt->old_options.push_back(std::move(it->second));
      if (value)
        rt->options[key] = std::make_shared<const std::string>(value);
      else if (it != rt->options.end())
        rt->options.erase(it);
    }
    for (const PluginRecord& p : rt->plugins)
      if (p.loaded && p.set_option && !plugin_error) plugin_error = p.set_option(p.ctx, key, value);
  });
  if (st) {
    gn_status_free(plugin_error);
    return st;
  }
  return plugin_error;
}

int32_t gn_runtime_get_option(gn_runtime* rt, const char* key, char* buf, size_t cap) {
  if (buf && cap) buf[0] = '\0';
  if (!rt || !key || !buf || !cap) return 0;
  for (const PluginRecord& p : rt->plugins)
    if (p.loaded && p.get_option && p.get_option(p.ctx, key, buf, cap)) {
      buf[cap - 1] = '\0';
      return 1;
    }
  std::lock_guard<std::mutex> lock(rt->options_mu);
  auto it = rt->options.find(key);
  if (it == rt->options.end()) return 0;
  std::snprintf(buf, cap, "%s", it->second->c_str());
  return 1;
}

gn_status* gn_runtime_set_num_threads(gn_runtime* rt, int32_t n) {
  return gn_runtime_set_option(rt, "num_threads", n > 0 ? std::to_string(n).c_str() : nullptr);
}

int32_t gn_runtime_num_threads(gn_runtime* rt) {
  char buf[32];
  if (!gn_runtime_get_option(rt, "num_threads", buf, sizeof buf)) return 1;
  const long n = std::strtol(buf, nullptr, 10);
  return n > 0 && n <= 4096 ? (int32_t)n : 1;
}

size_t gn_runtime_plugin_count(const gn_runtime* rt) { return rt ? rt->plugins.size() : 0; }

gn_status* gn_runtime_plugin_get(const gn_runtime* rt, size_t i, gn_plugin_record* out) {
  return guarded([&] {
    require_non_null("gn_runtime_plugin_get", {{"rt", rt}, {"out", out}});
    check_index("gn_runtime_plugin_get", i, rt->plugins.size(), "plugin(s)");
    const PluginRecord& p = rt->plugins[i];
    gn_plugin_record r{};
    r.struct_size = sizeof(r);
    r.path = p.path.c_str();
    r.name = p.name.c_str();
    r.version = p.version.c_str();
    r.description = p.description.c_str();
    r.abi_major = p.abi_major;
    r.abi_minor = p.abi_minor;
    r.negotiated_minor = p.negotiated_minor;
    r.loaded = p.loaded;
    r.error = p.error.c_str();
    copy_out(r, out);
  });
}

size_t gn_device_type_count(const gn_runtime* rt) { return rt ? rt->device_types.size() : 0; }

gn_status* gn_device_type_get(const gn_runtime* rt, size_t i, gn_device_type_record* out) {
  return guarded([&] {
    require_non_null("gn_device_type_get", {{"rt", rt}, {"out", out}});
    check_index("gn_device_type_get", i, rt->device_types.size(), "device type(s)");
    const DeviceType& dt = rt->device_types[i];
    static thread_local std::string providers;  // valid until the next call on this thread
    providers.clear();
    for (auto& p : dt.providers) {
      if (!providers.empty()) providers += ",";
      providers += plugin_name(rt, p.plugin);
    }
    gn_device_type_record r{};
    r.struct_size = sizeof(r);
    r.name = dt.name.c_str();
    r.backend = dt.vt ? plugin_name(rt, dt.serving_plugin).c_str() : "";
    r.id = (int32_t)i;
    r.device_count = dt.count;
    r.score = dt.vt ? dt.vt->score : 0;
    r.flags = dt.vt ? dt.vt->flags : 0;
    r.note = dt.note.c_str();
    r.providers = providers.c_str();
    copy_out(r, out);
  });
}

gn_status* gn_device_parse(const gn_runtime* rt, const char* spec, gn_device* out) {
  return guarded([&] {
    require_non_null("gn_device_parse", {{"rt", rt}, {"spec", spec}, {"out", out}});
    std::string s = spec;
    std::string type = s;
    int32_t index = 0;
    auto colon = s.find(':');
    if (colon != std::string::npos) {
      type = s.substr(0, colon);
      std::string idx = s.substr(colon + 1);
      char* end = nullptr;
      errno = 0;
      long long v = std::strtoll(idx.c_str(), &end, 10);
      if (idx.empty() || *end || v < 0 || errno == ERANGE || v > INT32_MAX)
        fail(GN_ERR_INVALID_ARGUMENT, "gn_device_parse: bad device '" + s + "': index must be a number in [0, " +
                                          std::to_string(INT32_MAX) + "]");
      index = (int32_t)v;
    }
    for (size_t i = 0; i < rt->device_types.size(); ++i)
      if (rt->device_types[i].name == type) {
        const DeviceType& dt = rt->device_types[i];
        if (index >= dt.count)
          fail(GN_ERR_DEVICE, "device '" + s + "' does not exist: " + std::to_string(dt.count) + " " + type +
                                  " device(s)" + (dt.note.empty() ? "" : " (" + dt.note + ")"));
        *out = gn_device{(int32_t)i, index};
        return;
      }
    std::string known;
    for (auto& dt : rt->device_types) known += (known.empty() ? "" : ", ") + dt.name;
    fail(GN_ERR_NOT_FOUND, "unknown device type '" + type + "' (known: " + (known.empty() ? "none" : known) + ")");
  });
}

void gn_device_format(const gn_runtime* rt, gn_device dev, char* buf, size_t cap) {
  if (!buf || cap == 0) return;
  std::string s = rt ? device_str(rt, dev) : "?";
  std::snprintf(buf, cap, "%s", s.c_str());
}

int32_t gn_device_count(const gn_runtime* rt, const char* type_name) {
  if (!rt || !type_name) return 0;
  for (auto& dt : rt->device_types)
    if (dt.name == type_name) return dt.count;
  return 0;
}

gn_status* gn_device_properties(gn_runtime* rt, gn_device dev, gn_device_props* out) {
  return query_sized(rt, dev, out, "gn_device_properties", {{"rt", rt}, {"out", out}}, &gn_device_vtable::device_props);
}

gn_status* gn_device_synchronize(gn_runtime* rt, gn_device dev) {
  return guarded([&] {
    DeviceType& dt = device_type_of(rt, dev, "gn_device_synchronize");
    if (dt.vt->device_synchronize) throw_if(dt.vt->device_synchronize(dt.vt->ctx, dev.index));
  });
}

gn_status* gn_memory_stats_get(gn_runtime* rt, gn_device dev, gn_memory_stats* out) {
  return query_sized(rt, dev, out, "gn_memory_stats_get", {{"out", out}}, &gn_device_vtable::memory_stats);
}

gn_status* gn_memory_empty_cache(gn_runtime* rt, gn_device dev) {
  return guarded([&] {
    DeviceType& dt = device_type_of(rt, dev, "gn_memory_empty_cache");
    if (dt.vt->empty_cache) throw_if(dt.vt->empty_cache(dt.vt->ctx, dev.index));
  });
}

gn_status* gn_memory_reset_peak(gn_runtime* rt, gn_device dev) {
  return guarded([&] {
    DeviceType& dt = device_type_of(rt, dev, "gn_memory_reset_peak");
    if (!dt.vt->reset_peak_stats) fail(GN_ERR_UNSUPPORTED, "device type '" + dt.name + "' cannot reset peak stats");
    throw_if(dt.vt->reset_peak_stats(dt.vt->ctx, dev.index));
  });
}

}  // extern "C"

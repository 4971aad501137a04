// core/src/loader.cpp - plugin discovery and loading (Boost.DLL), the host
// function table, and staged registration: a plugin's device types, ops,
// kernels and communicators are committed only if its init succeeds and its
// versions match, so a rejected plugin leaves nothing behind.
#include <boost/dll/runtime_symbol_info.hpp>
#include <boost/dll/shared_library.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>

#include "builtin.h"
#include "runtime.h"

namespace fs = std::filesystem;

namespace genesis::core {
namespace {

// Everything one plugin registers during gn_plugin_init, before commit.
struct Staging {
  gn_runtime* rt;
  int plugin;  // index into rt->plugins
  std::string plugin_name;
  std::vector<gn_device_vtable> device_types;
  std::vector<std::string> device_type_names;
  std::vector<std::unique_ptr<gn_op>> ops;
  struct StagedKernel {
    std::string op, device_type;
    int32_t dtype;
    uint32_t flags;
    gn_kernel_fn fn;
    void* user_data;
  };
  std::vector<StagedKernel> kernels;
  std::vector<gn_comm_vtable> comms;
  std::vector<std::string> comm_strings;
  std::string error;  // first registration error
  int32_t error_code = GN_OK;
};

// The host table and context one loaded plugin holds.  A plugin may keep the
// table for its whole life (the SDK keeps it in a static to make statuses from
// kernels and device slots), and one shared object serves every runtime of the
// process, so links are never freed: they are small and bounded by the number
// of plugin loads.  Registration works only while gn_plugin_init runs.
}  // namespace

struct HostLink {
  gn_host_api api{};
  std::atomic<Staging*> staging{nullptr};  // set only during gn_plugin_init
  std::atomic<gn_runtime*> rt{nullptr};    // cleared when the runtime goes away
  std::string plugin_name;                 // set once init succeeded
};

namespace {

HostLink* new_host_link(gn_runtime* rt) {
  // Deliberately leaked: a runtime held by a static object may be destroyed
  // (and detach its links) after this function's statics would have been
  // destroyed, so neither the list nor the links may ever be freed.
  static auto* mu = new std::mutex;
  static auto* links = new std::vector<HostLink*>;
  std::lock_guard<std::mutex> lock(*mu);
  links->push_back(new HostLink);
  HostLink* l = links->back();
  l->api = host_api_template();
  l->api.host_ctx = l;
  l->rt = rt;
  return l;
}

// The staging area behind host_ctx; outside gn_plugin_init an error status.
Staging* staging_of(void* host_ctx, const char* fn) {
  Staging* s = host_ctx ? static_cast<HostLink*>(host_ctx)->staging.load() : nullptr;
  if (!s)
    throw_if(
        make_status(GN_ERR_INVALID_ARGUMENT, std::string(fn) + ": registration is only allowed inside gn_plugin_init"));
  return s;
}

gn_status* host_status_new(int32_t code, const char* msg) { return make_status(code, msg ? msg : ""); }
int32_t host_status_code(const gn_status* st) { return st ? st->code : GN_OK; }
const char* host_status_message(const gn_status* st) { return st ? st->msg.c_str() : ""; }
void host_status_free(gn_status* st) { delete st; }

gn_status* reject(Staging* s, int32_t code, std::string msg) {
  if (s->error.empty()) s->error = msg, s->error_code = code;
  return make_status(code, std::move(msg));
}

gn_status* host_register_device_type(void* host_ctx, const gn_device_vtable* vt) {
  return guarded([&] {
    Staging* s = staging_of(host_ctx, "register_device_type");
    if (!vt || vt->struct_size < offsetof(gn_device_vtable, ctx) + sizeof(void*) || !vt->name || !*vt->name)
      throw_if(reject(s, GN_ERR_INVALID_ARGUMENT, "register_device_type: vtable without name"));
    std::string name = vt->name;
    for (auto& n : s->device_type_names)
      if (n == name) throw_if(reject(s, GN_ERR_ALREADY_EXISTS, "device type '" + name + "' registered twice"));
    gn_device_vtable copy{};
    // Readers accept smaller (older minor: missing slots stay NULL) and larger structs.
    std::memcpy(&copy, vt, std::min(vt->struct_size, sizeof(copy)));
    copy.struct_size = sizeof(copy);
    if (!copy.device_count || !copy.alloc || !copy.free || !copy.copy)
      throw_if(reject(s, GN_ERR_INVALID_ARGUMENT, "device type '" + name + "' lacks device_count/alloc/free/copy"));
    s->device_type_names.push_back(name);
    s->device_types.push_back(copy);
  });
}

// The struct_size of the minor-0 gn_op_schema and gn_kernel_desc: anything
// smaller lacks a field every host reads.
constexpr size_t kOpSchemaSizeV1_0 = GN_STRUCT_END(gn_op_schema, doc);
constexpr size_t kKernelDescSizeV1_0 = GN_STRUCT_END(gn_kernel_desc, user_data);
constexpr size_t kCommVtableSizeV1_0 = GN_STRUCT_END(gn_comm_vtable, barrier);

// Copy a plugin's struct honouring its struct_size: an older (shorter) struct
// leaves the newer fields zeroed, a newer (longer) one is read only as far as
// this host knows.  A NULL src (`what`, e.g. "schema") and sizes below the
// minor-0 size of `type` are refused through reject, naming `fn`.
template <class T>
T copy_sized(Staging* s, const T* src, size_t v1_0_size, const char* fn, const char* what, const char* type) {
  if (!src) throw_if(reject(s, GN_ERR_INVALID_ARGUMENT, std::string(fn) + ": " + what + " is NULL"));
  if (src->struct_size < v1_0_size)
    throw_if(reject(s, GN_ERR_INVALID_ARGUMENT,
                    std::string(fn) + ": " + type + ".struct_size is " + std::to_string(src->struct_size) +
                        ", the smallest valid size (ABI 1.0) is " + std::to_string(v1_0_size)));
  T dst{};
  std::memcpy(static_cast<void*>(&dst), src, std::min(src->struct_size, sizeof(T)));
  dst.struct_size = sizeof(T);
  return dst;
}

gn_status* host_register_op(void* host_ctx, const gn_op_schema* plugin_schema) {
  return guarded([&] {
    Staging* s = staging_of(host_ctx, "register_op");
    const gn_op_schema copy = copy_sized(s, plugin_schema, kOpSchemaSizeV1_0, "register_op", "schema", "gn_op_schema");
    const gn_op_schema* schema = &copy;
    if (!schema->name || !*schema->name || !schema->infer)
      throw_if(reject(s, GN_ERR_INVALID_ARGUMENT, "register_op: schema needs a name and an infer function"));
    if (schema->n_attrs && !schema->attrs)
      throw_if(reject(s, GN_ERR_INVALID_ARGUMENT,
                      "register_op: '" + std::string(schema->name) + "' has n_attrs " +
                          std::to_string(schema->n_attrs) + " but attrs is NULL"));
    std::string name = schema->name;
    bool dup = s->rt->op_by_name.count(name) > 0;
    for (auto& o : s->ops) dup = dup || o->name == name;
    if (dup) throw_if(reject(s, GN_ERR_ALREADY_EXISTS, "op '" + name + "' already exists"));
    auto op = std::make_unique<gn_op>();
    op->name = name;
    op->doc = schema->doc ? schema->doc : "";
    op->origin = s->plugin_name;
    op->schema = *schema;
    op->attrs.assign(schema->attrs, schema->attrs + schema->n_attrs);
    for (size_t i = 0; i < op->attrs.size(); ++i) {
      op->attr_names.emplace_back(op->attrs[i].name ? op->attrs[i].name : "");
      auto& def = op->attrs[i].default_value;
      op->attr_default_ints.emplace_back();
      op->attr_default_strings.emplace_back();
      if (op->attrs[i].has_default && def.kind == GN_ATTR_INTS && def.u.ints.size)
        op->attr_default_ints.back().assign(def.u.ints.data, def.u.ints.data + def.u.ints.size);
      if (op->attrs[i].has_default && def.kind == GN_ATTR_STRING && def.u.s) op->attr_default_strings.back() = def.u.s;
    }
    s->ops.push_back(std::move(op));
  });
}

gn_status* host_register_kernel(void* host_ctx, const gn_kernel_desc* desc) {
  return guarded([&] {
    Staging* s = staging_of(host_ctx, "register_kernel");
    const gn_kernel_desc copy = copy_sized(s, desc, kKernelDescSizeV1_0, "register_kernel", "kernel", "gn_kernel_desc");
    const gn_kernel_desc* k = &copy;
    if (!k->op || !k->device_type || !k->fn)
      throw_if(reject(s, GN_ERR_INVALID_ARGUMENT, "register_kernel: needs op, device_type and fn"));
    if (k->dtype != GN_DTYPE_ANY && (k->dtype < 0 || k->dtype >= GN_DTYPE_COUNT))
      throw_if(reject(s, GN_ERR_INVALID_ARGUMENT, std::string("register_kernel: bad dtype for ") + k->op));
    bool known = s->rt->op_by_name.count(k->op) > 0;
    for (auto& o : s->ops) known = known || o->name == k->op;
    if (!known) throw_if(reject(s, GN_ERR_NOT_FOUND, std::string("register_kernel: unknown op '") + k->op + "'"));
    for (auto& e : s->kernels)
      if (e.op == k->op && e.device_type == k->device_type && e.dtype == k->dtype)
        throw_if(reject(s, GN_ERR_ALREADY_EXISTS,
                        std::string("kernel for (") + k->op + ", " + k->device_type + ", " + gn_dtype_name(k->dtype) +
                            ") registered twice"));
    s->kernels.push_back({k->op, k->device_type, k->dtype, k->flags, k->fn, k->user_data});
  });
}

gn_status* host_register_comm(void* host_ctx, const gn_comm_vtable* c) {
  return guarded([&] {
    Staging* s = staging_of(host_ctx, "register_comm");
    const gn_comm_vtable copy = copy_sized(s, c, kCommVtableSizeV1_0, "register_comm", "vtable", "gn_comm_vtable");
    if (!copy.name || !*copy.name) throw_if(reject(s, GN_ERR_INVALID_ARGUMENT, "register_comm: needs a name"));
    s->comms.push_back(copy);
  });
}

const char* host_option_get(void* host_ctx, const char* key) {
  gn_runtime* rt = host_ctx ? static_cast<HostLink*>(host_ctx)->rt.load() : nullptr;
  if (!key || !rt) return nullptr;
  std::lock_guard<std::mutex> lock(rt->options_mu);
  auto it = rt->options.find(key);
  return it == rt->options.end() ? nullptr : it->second->c_str();
}

void host_log(void* host_ctx, int32_t level, const char* msg) {
  auto* l = static_cast<HostLink*>(host_ctx);
  if (level < GN_LOG_WARN && !std::getenv("GENESIS_VERBOSE")) return;
  const char* who = l && !l->plugin_name.empty() ? l->plugin_name.c_str() : "?";
  std::fprintf(stderr, "genesis[%s]: %s\n", who, msg ? msg : "");
}

// Commit a plugin's staged registrations into the runtime.
void commit(Staging& s) {
  gn_runtime* rt = s.rt;
  for (size_t i = 0; i < s.device_types.size(); ++i) {
    int t = device_type_intern(rt, s.device_type_names[i]);
    rt->device_types[t].providers.push_back({s.plugin, s.device_types[i]});
  }
  for (auto& op : s.ops) {
    op->id = (int)rt->ops.size();
    op->rt = rt;
    op->schema.name = op->name.c_str();
    op->schema.doc = op->doc.c_str();
    for (size_t i = 0; i < op->attrs.size(); ++i) {
      op->attrs[i].name = op->attr_names[i].c_str();
      if (!op->attr_default_ints[i].empty()) op->attrs[i].default_value.u.ints.data = op->attr_default_ints[i].data();
      if (op->attrs[i].default_value.kind == GN_ATTR_STRING && op->attrs[i].has_default)
        op->attrs[i].default_value.u.s = op->attr_default_strings[i].c_str();
      if (op->attrs[i].kind == GN_ATTR_DEVICE) op->device_attr = (int)i;
    }
    op->schema.attrs = op->attrs.data();
    op->schema.n_attrs = op->attrs.size();
    rt->op_by_name[op->name] = op->id;
    rt->ops.push_back(std::move(op));
  }
  for (auto& k : s.kernels) {
    int t = device_type_intern(rt, k.device_type);
    gn_op* op = rt->ops[rt->op_by_name.at(k.op)].get();
    op->kernels.push_back({s.plugin, t, k.dtype, k.flags, k.fn, k.user_data});
  }
  for (auto& c : s.comms) {
    gn_comm_vtable copy = c;
    for (const char** str : {&copy.name, &copy.device_type})
      if (*str) {
        rt->comm_strings.push_back(std::make_unique<std::string>(*str));
        *str = rt->comm_strings.back()->c_str();
      }
    rt->comms.push_back(copy);
  }
  rebuild_dispatch(rt);
}

// Load, init and commit one file; on rejection fill rec.error and throw with
// the code of the table in docs/abi.md.  `file_name`, when not empty, is the
// name the file's name promises (discovery): the plugin must report it.
void load_one(gn_runtime* rt, const std::string& path, const std::string& file_name) {
  rt->plugins.emplace_back();
  int index = (int)rt->plugins.size() - 1;
  auto fail_with = [&](std::string why, int32_t code) {
    PluginRecord& rec = rt->plugins[index];
    rec.error = why;
    if (!(rt->flags & GN_RUNTIME_QUIET))
      std::fprintf(stderr, "genesis: skipping plugin %s: %s\n", path.c_str(), why.c_str());
    fail(code, "plugin " + path + " rejected: " + why);
  };
  rt->plugins[index].path = path;

  std::shared_ptr<boost::dll::shared_library> lib;
  try {
    lib = std::make_shared<boost::dll::shared_library>(
        boost::dll::fs::path(path), boost::dll::load_mode::rtld_local | boost::dll::load_mode::rtld_now);
  } catch (const std::exception& e) {
    // Boost wraps dlerror() as "...(dlerror system message: <text>): <errno text>";
    // the dlerror text is the useful part.
    std::string why = e.what() ? e.what() : "";
    const std::string tag = "dlerror system message: ";
    auto at = why.find(tag);
    if (at != std::string::npos) {
      why = why.substr(at + tag.size());
      auto end = why.rfind("):");
      if (end != std::string::npos) why.resize(end);
    }
    std::error_code ec;
    const bool missing = !fs::exists(path, ec);
    fail_with("cannot load: " + (why.empty() ? std::string("unknown dlopen error") : why),
              missing ? GN_ERR_NOT_FOUND : GN_ERR_IO);
  }
  if (!lib->has(GN_PLUGIN_INIT_SYMBOL)) {
    ::dlerror();
    ::dlsym(lib->native(), GN_PLUGIN_INIT_SYMBOL);
    const char* dl = ::dlerror();
    fail_with(std::string("no " GN_PLUGIN_INIT_SYMBOL " symbol: ") + (dl ? dl : "not exported") +
                  " (is it a Genesis plugin? exported with GN_PLUGIN_EXPORT?)",
              GN_ERR_NOT_FOUND);
  }
  auto init = lib->get<gn_status*(const gn_host_api*, gn_plugin_info*)>(GN_PLUGIN_INIT_SYMBOL);

  Staging staging{rt, index, "", {}, {}, {}, {}, {}, {}, {}, GN_OK};
  HostLink* link = new_host_link(rt);
  link->staging = &staging;
  gn_plugin_info info{};
  info.struct_size = sizeof(info);
  gn_status* st = nullptr;
  try {
    st = init(&link->api, &info);
  } catch (...) {  // a plugin must not throw; survive one that does
    st = make_status(GN_ERR_INTERNAL, "gn_plugin_init threw a C++ exception");
  }
  link->staging = nullptr;
  rt->plugins[index].host_link = link;
  PluginRecord& rec = rt->plugins[index];
  rec.abi_major = info.abi_major;
  rec.abi_minor = info.abi_minor;
  rec.name = info.name ? info.name : "";
  rec.version = info.version ? info.version : "";
  rec.description = info.description ? info.description : "";
  char versions[160];
  std::snprintf(versions, sizeof versions, "plugin ABI %u.%u, host ABI %d.%d", info.abi_major, info.abi_minor,
                GN_ABI_VERSION_MAJOR, GN_ABI_VERSION_MINOR);
  // A major mismatch is refused without calling shutdown: the rest of a
  // foreign major's gn_plugin_info cannot be trusted.
  if (info.abi_major != GN_ABI_VERSION_MAJOR) {
    std::string why = "ABI major " + std::to_string(info.abi_major) +
                      " (plugin) != " + std::to_string(GN_ABI_VERSION_MAJOR) + " (host)";
    if (st) why += ": " + st->msg;
    delete st;
    fail_with(why + " [" + versions + "]", GN_ERR_VERSION);
  }
  if (st) {  // the plugin cleaned up itself; its own code travels on
    std::string why = "init failed: " + st->msg;
    const int32_t code = st->code != GN_OK ? st->code : GN_ERR_INTERNAL;
    delete st;
    fail_with(why + " [" + versions + "]", code);
  }
  // From here on init succeeded, so every rejection first shuts the plugin
  // down: its state and threads must not outlive the library.
  auto reject_after_init = [&](const std::string& why, int32_t code) {
    if (info.shutdown) {
      try {
        info.shutdown(info.ctx);
      } catch (...) {  // a plugin must not throw; survive one that does
      }
    }
    fail_with(why + " [" + versions + "]", code);
  };
  if (!staging.error.empty()) reject_after_init("registration failed: " + staging.error, staging.error_code);
  if (rec.name.empty()) reject_after_init("plugin info has no name", GN_ERR_INVALID_ARGUMENT);
  if (!file_name.empty() && rec.name != file_name)
    reject_after_init("the plugin calls itself '" + rec.name + "' but its file is libgenesis_plugin_" + file_name +
                          ".so: a discovered plugin must be named after its file, so that GENESIS_PLUGINS and "
                          "--plugins select it by the name `genesis info` shows",
                      GN_ERR_INVALID_ARGUMENT);
  for (int i = 0; i < index; ++i)
    if (rt->plugins[i].loaded && rt->plugins[i].name == rec.name)
      reject_after_init("a plugin named '" + rec.name + "' is already loaded from " + rt->plugins[i].path,
                        GN_ERR_ALREADY_EXISTS);
  staging.plugin_name = rec.name;
  link->plugin_name = rec.name;
  for (auto& op : staging.ops) op->origin = rec.name;
  rec.negotiated_minor = std::min<uint32_t>(info.abi_minor, GN_ABI_VERSION_MINOR);
  // Slots newer than the negotiated minor are never called.
  if (rec.negotiated_minor < 1)
    for (auto& vt : staging.device_types)
      vt.graph_begin = nullptr, vt.graph_end = nullptr, vt.graph_launch = nullptr, vt.graph_destroy = nullptr;
  if (rec.negotiated_minor < 2)
    for (auto& c : staging.comms)
      c.init = nullptr, c.send = nullptr, c.recv = nullptr, c.all_to_all = nullptr, c.synchronize = nullptr,
      c.abort = nullptr, c.error = nullptr;
  rec.ctx = info.ctx;
  rec.shutdown = info.shutdown;
  if (rec.negotiated_minor >= 3 && info.struct_size >= GN_STRUCT_END(gn_plugin_info, get_option)) {
    rec.set_option = info.set_option;
    rec.get_option = info.get_option;
  }
  rec.library = lib;
  rec.loaded = true;
  commit(staging);
}

}  // namespace

const gn_host_api& host_api_template() {
  static const gn_host_api api = [] {
    return gn_host_api{.struct_size = sizeof(gn_host_api),
                       .abi_major = GN_ABI_VERSION_MAJOR,
                       .abi_minor = GN_ABI_VERSION_MINOR,
                       .host_ctx = nullptr,
                       .status_new = host_status_new,
                       .status_code = host_status_code,
                       .status_message = host_status_message,
                       .status_free = host_status_free,
                       .register_device_type = host_register_device_type,
                       .register_op = host_register_op,
                       .register_kernel = host_register_kernel,
                       .register_comm = host_register_comm,
                       .option_get = host_option_get,
                       .log = host_log};
  }();
  return api;
}

void host_link_detach(HostLink* link) {
  if (link) link->rt = nullptr;
}

void register_builtin_ops(gn_runtime* rt) {
  const auto& schemas = builtin_schemas();
  for (const gn_op_schema& s : schemas) {
    auto op = std::make_unique<gn_op>();
    op->rt = rt;
    op->id = (int)rt->ops.size();
    op->schema = s;
    op->name = s.name;
    op->doc = s.doc ? s.doc : "";
    op->origin = "core";
    op->attrs.assign(s.attrs, s.attrs + s.n_attrs);
    for (size_t i = 0; i < op->attrs.size(); ++i)
      if (op->attrs[i].kind == GN_ATTR_DEVICE) op->device_attr = (int)i;
    op->schema.attrs = op->attrs.data();
    rt->op_by_name[op->name] = op->id;
    rt->ops.push_back(std::move(op));
  }
  rt->op_cast = rt->ops[(int)OpId::cast].get();
  rt->op_copy = rt->ops[(int)OpId::copy].get();
}

void load_plugin_file(gn_runtime* rt, const std::string& path) { load_one(rt, path, ""); }

void load_plugins(gn_runtime* rt, const gn_runtime_options* o) {
  std::vector<std::string> dirs;
  if (o && o->plugin_path) dirs = split_list(o->plugin_path, ':');
  bool defaults = !(o && (o->flags & GN_RUNTIME_NO_DEFAULT_PATHS));
  if (defaults) {
    if (const char* env = std::getenv("GENESIS_PLUGIN_PATH"))
      for (auto& d : split_list(env, ':')) dirs.push_back(d);
    // The plugin dir sits next to libgenesis.so: <libdir>/genesis/plugins.
    boost::dll::fs::path self = boost::dll::symbol_location(gn_runtime_create);
    dirs.push_back((fs::path(self.parent_path().string()) / "genesis" / "plugins").string());
  }
  std::set<std::string> allow;
  const char* allow_list = (o && o->plugins) ? o->plugins : std::getenv("GENESIS_PLUGINS");
  if (allow_list)
    for (auto& n : split_list(allow_list, ',')) allow.insert(n);

  const std::string prefix = "libgenesis_plugin_", suffix = ".so";
  std::set<std::string> seen;
  for (const auto& dir : dirs) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      std::string f = e.path().filename().string();
      if (f.size() > prefix.size() + suffix.size() && f.rfind(prefix, 0) == 0 &&
          f.compare(f.size() - suffix.size(), suffix.size(), suffix) == 0)
        files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& p : files) {
      std::string f = p.filename().string();
      std::string stem = f.substr(prefix.size(), f.size() - prefix.size() - suffix.size());
      if (!allow.empty() && !allow.count(stem)) continue;
      if (!seen.insert(f).second) continue;  // shadowed by an earlier dir
      try {
        load_one(rt, p.string(), stem);
      } catch (const Error&) {
        // recorded and reported; keep going
      }
    }
  }
}

}  // namespace genesis::core

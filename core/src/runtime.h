// core/src/runtime.h - the runtime's state: plugins, device types, ops with
// their kernel tables, tensors and storages.  The ABI's opaque handles
// (gn_runtime, gn_op, gn_tensor, ...) are defined here.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "checked.h"
#include "genesis/genesis.h"
#include "profiler.h"
#include "status.h"

namespace genesis::core {

// Plugin index of things the core provides itself.
constexpr int kNoPlugin = -1;

// One plugin seen by the runtime, loaded or rejected.
struct HostLink;  // loader.cpp: the host table a plugin keeps (never freed)

struct PluginRecord {
  std::string path, name, version, description, error;
  uint32_t abi_major = 0, abi_minor = 0, negotiated_minor = 0;
  bool loaded = false;
  void* ctx = nullptr;
  void (*shutdown)(void*) = nullptr;
  gn_status* (*set_option)(void* ctx, const char* key, const char* value) = nullptr;  // minor 3
  int32_t (*get_option)(void* ctx, const char* key, char* buf, size_t cap) = nullptr;
  std::shared_ptr<void> library;  // keeps the shared object mapped (Boost.DLL)
  HostLink* host_link = nullptr;  // detached (option_get -> NULL) when the runtime dies
};

// A backend's implementation of a device type.
struct DeviceProvider {
  int plugin = -1;
  gn_device_vtable vt{};  // copied, missing (older-minor) slots zeroed
};

// Per-device mutable state.
struct DeviceState {
  gn_stream* current = nullptr;  // NULL = default stream
  std::atomic<uint64_t> seed{67280421310721ull};
  std::atomic<uint64_t> offset{0};
};

// A device type ("cpu"); exists once named by a provider or a kernel.
struct DeviceType {
  std::string name;
  std::vector<DeviceProvider> providers;  // best first
  const gn_device_vtable* vt = nullptr;   // serving provider's vtable, NULL if none
  int serving_plugin = -2;                // kNoPlugin = the core; -2 = not chosen yet
  int32_t count = 0;
  std::string note;  // why count is 0
  std::vector<std::unique_ptr<DeviceState>> devices;
};

// A registered kernel.
struct Kernel {
  int plugin;
  int device_type;
  int32_t dtype;  // or GN_DTYPE_ANY
  uint32_t flags;
  gn_kernel_fn fn;
  void* user_data;
};

}  // namespace genesis::core

// An op: schema (deep-copied), origin and its dispatch table.
struct gn_op {
  const gn_runtime* rt = nullptr;
  int id = 0;
  gn_op_schema schema{};
  std::string origin;  // "core" or plugin name
  std::string name, doc;
  std::vector<gn_attr_spec> attrs;
  std::vector<std::string> attr_names;
  std::vector<std::vector<int64_t>> attr_default_ints;
  std::vector<std::string> attr_default_strings;
  int device_attr = -1;  // index of the attribute of kind DEVICE, if any
  std::vector<genesis::core::Kernel> kernels;
  // table[device_type * (GN_DTYPE_COUNT) + dtype] = kernel indices, best first
  // (kernels of that dtype before GN_DTYPE_ANY ones).
  std::vector<std::vector<uint16_t>> table;
};

struct gn_runtime {
  uint32_t magic = genesis::core::kRuntimeMagic;  // first: see checked.h
  std::atomic<int64_t> refs{1};                   // 1 for the creator + 1 per live storage
  uint32_t flags = 0;
  // Plugin options.  A value stays allocated for the runtime's life (plugins
  // may hold option_get's pointer): a new value goes into a fresh string.
  std::unordered_map<std::string, std::shared_ptr<const std::string>> options;
  std::vector<std::shared_ptr<const std::string>> old_options;
  std::mutex options_mu;
  std::unordered_map<std::string, std::string> backends;  // device type -> plugin name
  std::vector<genesis::core::PluginRecord> plugins;
  std::vector<genesis::core::DeviceType> device_types;
  std::vector<std::unique_ptr<gn_op>> ops;
  std::unordered_map<std::string, int> op_by_name;
  std::vector<gn_comm_vtable> comms;
  std::vector<std::unique_ptr<std::string>> comm_strings;  // names the comms point to
  genesis::core::Profiler profiler;
  int cpu_type = -1;
  bool destroyed = false;
  std::mutex mu;  // guards registration and lazily-created state
  // Hot ops the core itself calls (cast, copy).
  const gn_op* op_cast = nullptr;
  const gn_op* op_copy = nullptr;
};

namespace genesis::core {

// Reference-counted device memory.
struct Storage {
  std::atomic<int64_t> refs{1};
  gn_runtime* rt = nullptr;
  gn_device device{};
  void* data = nullptr;
  size_t bytes = 0;
  DLManagedTensorVersioned* dlpack = nullptr;  // imported: deleter owns the memory
  // The allocator that made `data` frees it, even if another provider serves
  // the device type by the time the storage dies.
  gn_status* (*free_fn)(void*, int32_t, void*, void*) = nullptr;
  void* free_ctx = nullptr;
};

}  // namespace genesis::core

// A tensor handle: a view of a storage.
struct gn_tensor {
  uint32_t magic = genesis::core::kTensorMagic;  // first: see checked.h
  std::atomic<int64_t> refs{1};
  genesis::core::Storage* storage = nullptr;
  int32_t dtype = GN_F32;
  int32_t ndim = 0;
  uint32_t flags = 0;  // GN_META_*
  int64_t offset = 0;  // in elements
  int64_t shape[GN_MAX_DIMS] = {};
  int64_t strides[GN_MAX_DIMS] = {};
};

struct gn_stream {
  uint32_t magic;  // kStreamMagic; first: see checked.h
  gn_runtime* rt;
  gn_device device;
  void* native;
};

struct gn_event {
  uint32_t magic;  // kEventMagic; first: see checked.h
  gn_runtime* rt;
  gn_device device;
  void* native;
};

struct gn_graph {
  gn_runtime* rt;
  gn_device device;
  void* native;
};

struct gn_generator {
  std::atomic<uint64_t> seed;
  std::atomic<uint64_t> offset;
};

namespace genesis::core {

// ---- runtime ----
void runtime_retain(gn_runtime* rt);
void runtime_release(gn_runtime* rt);
// Device type id by name, creating an empty entry if absent (registration only).
int device_type_intern(gn_runtime* rt, const std::string& name);
// In checked mode, aborts when rt is gone or was passed to gn_runtime_destroy
// (the check every entry point with a runtime argument makes).
void check_runtime_arg(const gn_runtime* rt, const char* fn);
// Validated device: its type and state, or throw naming `what`.
DeviceType& device_type_of(gn_runtime* rt, gn_device dev, const char* what);
DeviceState& device_state(gn_runtime* rt, gn_device dev);
// "cuda:1"
std::string device_str(const gn_runtime* rt, gn_device dev);
// Native current stream of a device.
void* current_stream(gn_runtime* rt, gn_device dev);
// The default device (cpu:0); throws if no cpu provider.
gn_device default_device(gn_runtime* rt);
// "core" for kNoPlugin, else the plugin's name.
const std::string& plugin_name(const gn_runtime* rt, int plugin);
// Register the core's kernel-less host memory provider for "cpu".
void register_core_host(gn_runtime* rt);
// Rebuild every op's kernel table after a registration change.
void rebuild_dispatch(gn_runtime* rt);

// ---- loader ----
// Discover and load plugins per options; records every outcome.
void load_plugins(gn_runtime* rt, const gn_runtime_options* options);
// Load one plugin file; throws with the rejection reason when it is rejected.
void load_plugin_file(gn_runtime* rt, const std::string& path);
// Register the built-in ops.
void register_builtin_ops(gn_runtime* rt);
// The host table handed to plugins (host_ctx filled per load).
const gn_host_api& host_api_template();
// Called when a runtime dies: the plugin's host table stays valid, but no
// longer reaches the runtime.
void host_link_detach(HostLink* link);

// ---- tensors ----
size_t elem_size(int32_t dtype);
Storage* storage_alloc(gn_runtime* rt, gn_device dev, size_t bytes);
void storage_release(Storage* s);
gn_tensor* tensor_new(Storage* s, int32_t dtype, int32_t ndim, const int64_t* shape, const int64_t* strides,
                      int64_t offset);
// New contiguous tensor.
gn_tensor* tensor_empty(gn_runtime* rt, int32_t ndim, const int64_t* shape, int32_t dtype, gn_device dev,
                        const char* fn = "tensor_empty");
void tensor_release(gn_tensor* t);
bool tensor_is_contiguous(const gn_tensor* t);
int64_t tensor_numel(const gn_tensor* t);
void contiguous_strides(int32_t ndim, const int64_t* shape, int64_t* strides);
// Number of elements of shape, after checking that no size is negative and
// that the product of the sizes (zeros counted as ones, so contiguous strides
// fit too) times item_size fits in int64; fails naming fn and the shape.
int64_t checked_numel(int32_t ndim, const int64_t* shape, size_t item_size, const char* fn);
void tensor_view(const gn_tensor* t, gn_tensor_view* v);
std::string shape_string(int32_t ndim, const int64_t* shape);

// ---- dispatch ----
// Call op; outputs as in gn_op_call.  Throws Error.
void op_call(gn_runtime* rt, const gn_op* op, gn_tensor* const* in, size_t n_in, const gn_attr_value* attrs,
             size_t n_attrs, gn_tensor** out, size_t n_out, const gn_call_options* options);
// Dense copy of t (new reference).
gn_tensor* make_contiguous(gn_tensor* t);
// t converted to dtype (new tensor).
gn_tensor* cast_to(gn_tensor* t, int32_t dtype);

// The non-empty fields of a separated list ("a,,b" -> {"a", "b"}); NULL gives none.
std::vector<std::string> split_list(const char* s, char sep);

}  // namespace genesis::core

/* genesis/plugin.h - the plugin entry point and the host function table.
 *
 * A plugin is a shared library exporting exactly one symbol:
 *
 *   gn_status* gn_plugin_init(const gn_host_api* host, gn_plugin_info* info);
 *
 * The host passes its table in; the plugin fills `info` (at least its ABI
 * version and name) and registers device types, ops, kernels and
 * communicators through the table.  Registrations are staged: if init returns
 * an error, or the versions do not match, nothing it registered is kept.
 * The table and its host_ctx stay valid for the life of the process, so a
 * plugin may keep the pointer (statuses from kernels and device slots, log);
 * the register_* slots succeed only while gn_plugin_init runs, and option_get
 * returns NULL once the runtime that loaded the plugin is destroyed.
 * Plugins never link libgenesis.
 *
 * Invariant prefix (never changes, even across majors): gn_host_api starts
 * with struct_size, abi_major, abi_minor; gn_plugin_info likewise.
 */
#ifndef GENESIS_PLUGIN_H
#define GENESIS_PLUGIN_H

#include "genesis/comm.h"
#include "genesis/device.h"
#include "genesis/op.h"

#ifdef __cplusplus
extern "C" {
#endif

/* gn_host_api.log levels */
typedef enum gn_log_level { GN_LOG_DEBUG = 0, GN_LOG_INFO = 1, GN_LOG_WARN = 2, GN_LOG_ERROR = 3 } gn_log_level;

/* Functions the host (libgenesis) offers a plugin.  Append-only. */
typedef struct gn_host_api {
  size_t struct_size;
  uint32_t abi_major;
  uint32_t abi_minor;
  void* host_ctx; /* pass back as the first argument where asked */

  /* Statuses: create (copies msg), read, free. */
  gn_status* (*status_new)(int32_t code, const char* msg);
  int32_t (*status_code)(const gn_status* st);
  const char* (*status_message)(const gn_status* st);
  void (*status_free)(gn_status* st);

  /* Registration (staged until init succeeds). */
  gn_status* (*register_device_type)(void* host_ctx, const gn_device_vtable* vtable);
  gn_status* (*register_op)(void* host_ctx, const gn_op_schema* schema);
  gn_status* (*register_kernel)(void* host_ctx, const gn_kernel_desc* kernel);
  gn_status* (*register_comm)(void* host_ctx, const gn_comm_vtable* comm);

  /* Runtime option value by key (e.g. "num_threads"), NULL if unset. */
  const char* (*option_get)(void* host_ctx, const char* key);
  /* Log a message tagged with the plugin's name. */
  void (*log)(void* host_ctx, int32_t level, const char* msg);
} gn_host_api;

/* What a plugin tells the host about itself.  The host zero-fills it and
 * presets struct_size to its own sizeof before calling gn_plugin_init; a
 * plugin built against a newer minor writes only the fields that end within
 * struct_size (GN_STRUCT_END). */
typedef struct gn_plugin_info {
  size_t struct_size;
  uint32_t abi_major;          /* GN_ABI_VERSION_MAJOR the plugin was built with */
  uint32_t abi_minor;          /* GN_ABI_VERSION_MINOR the plugin was built with */
  const char* name;            /* short, unique: "reference", "cpu", "cuda" */
  const char* version;         /* plugin's own version string */
  const char* description;     /* one line for `genesis info` */
  void* ctx;                   /* plugin state, handed to shutdown */
  void (*shutdown)(void* ctx); /* optional; called when the runtime is destroyed */

  /* ---- minor 3: options after load (NULL = the plugin reads options only at init) ---- */
  /* An option set through gn_runtime_set_option (value NULL = back to the
   * default).  Keys the plugin does not read are ignored (return NULL). */
  gn_status* (*set_option)(void* ctx, const char* key, const char* value);
  /* The value in effect for a key the plugin reads (e.g. "num_threads" as
   * resolved from the environment), NUL-terminated into buf; returns 1, or 0
   * for a key the plugin does not read. */
  int32_t (*get_option)(void* ctx, const char* key, char* buf, size_t cap);
} gn_plugin_info;

/* Signature of the one exported entry point. */
typedef gn_status* (*gn_plugin_init_fn)(const gn_host_api* host, gn_plugin_info* info);

#define GN_PLUGIN_INIT_SYMBOL "gn_plugin_init"

#ifdef __cplusplus
}
#endif

#endif /* GENESIS_PLUGIN_H */

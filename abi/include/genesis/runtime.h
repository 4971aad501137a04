/* genesis/runtime.h - public C API: runtime, plugins, devices, streams,
 * memory, RNG, profiler, statuses.  Every function that can fail returns
 * gn_status* (NULL = OK); the caller frees a non-NULL status. */
#ifndef GENESIS_RUNTIME_H
#define GENESIS_RUNTIME_H

#include "genesis/device.h"
#include "genesis/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gn_runtime gn_runtime;
typedef struct gn_stream gn_stream;
typedef struct gn_event gn_event;
typedef struct gn_graph gn_graph;
typedef struct gn_generator gn_generator;

/* ------------------------------------------------------------------ status */

/* Stable code of a status (GN_OK for NULL). */
GN_API int32_t gn_status_code(const gn_status* st);
/* Message of a status ("" for NULL); valid until gn_status_free. */
GN_API const char* gn_status_message(const gn_status* st);
/* Free a status (NULL is fine). */
GN_API void gn_status_free(gn_status* st);
/* Name of a code, e.g. "GN_ERR_SHAPE". */
GN_API const char* gn_status_code_name(int32_t code);
/* New status with a code and a copy of msg (NULL = ""), for callbacks that
 * answer the core (gn_comm_store); GN_OK gives NULL. */
GN_API gn_status* gn_status_create(int32_t code, const char* msg);

/* ----------------------------------------------------------------- version */

/* ABI version of this libgenesis. */
GN_API void gn_abi_version(uint32_t* major, uint32_t* minor);
/* Library version string, e.g. "0.1.0". */
GN_API const char* gn_version_string(void);

/* ----------------------------------------------------------------- runtime */

/* gn_runtime_options.flags */
#define GN_RUNTIME_NO_DEFAULT_PATHS 0x1u /* skip $GENESIS_PLUGIN_PATH and the built-in plugin dir */
#define GN_RUNTIME_QUIET 0x2u            /* do not print plugin-rejection messages to stderr */
#define GN_RUNTIME_NO_PLUGINS 0x4u       /* load nothing at create (gn_runtime_load_plugin later) */

/* How to create a runtime.  Zero-initialise, set struct_size, fill what you need. */
typedef struct gn_runtime_options {
  size_t struct_size;
  uint32_t flags;          /* GN_RUNTIME_* */
  const char* plugin_path; /* colon-separated dirs searched first (may be NULL) */
  const char* plugins;     /* comma-separated plugin names to load; NULL = all found.
                              Overridden by $GENESIS_PLUGINS when NULL. */
  const char* backends;    /* which plugin serves a device type: "cpu=reference,cuda=cuda" */
  size_t n_options;        /* plugin options, read by plugins via host->option_get */
  const char* const* option_keys;
  const char* const* option_values;
} gn_runtime_options;

/* Create a runtime: discover and load plugins.  options may be NULL (defaults). */
GN_API gn_status* gn_runtime_create(const gn_runtime_options* options, gn_runtime** out);
/* Destroy a runtime; tensors still alive keep it alive until released. */
GN_API void gn_runtime_destroy(gn_runtime* rt);
/* Load one more plugin from a path (same checks as discovery). */
GN_API gn_status* gn_runtime_load_plugin(gn_runtime* rt, const char* path);

/* One plugin the runtime saw, loaded or rejected. */
typedef struct gn_plugin_record {
  size_t struct_size;
  const char* path;
  const char* name; /* "" when rejected before init */
  const char* version;
  const char* description;
  uint32_t abi_major; /* what the plugin claimed (0 if unknown) */
  uint32_t abi_minor;
  uint32_t negotiated_minor;
  int32_t loaded;    /* 1 loaded, 0 rejected */
  const char* error; /* why it was rejected ("" when loaded) */
} gn_plugin_record;

/* Set a plugin option after creation (key "num_threads", value "4"; value
 * NULL = back to the default): kept for option_get and handed to every loaded
 * plugin that reads options after load.  Not while other calls run on rt. */
GN_API gn_status* gn_runtime_set_option(gn_runtime* rt, const char* key, const char* value);
/* The value in effect for an option: the first plugin that reads the key
 * reports it (resolved defaults included), else the value set at creation or
 * by gn_runtime_set_option.  Writes it NUL-terminated into buf; returns 1, or
 * 0 (buf "") when neither a plugin nor the options know the key. */
GN_API int32_t gn_runtime_get_option(gn_runtime* rt, const char* key, char* buf, size_t cap);
/* Threads of the CPU backend's parallel work (option "num_threads"); n <= 0
 * restores the default ($OMP_NUM_THREADS, $GENESIS_NUM_THREADS, else the
 * cores the process may use). */
GN_API gn_status* gn_runtime_set_num_threads(gn_runtime* rt, int32_t n);
/* The thread count in effect (1 when no loaded plugin has threads). */
GN_API int32_t gn_runtime_num_threads(gn_runtime* rt);

/* Number of plugin records (loaded and rejected). */
GN_API size_t gn_runtime_plugin_count(const gn_runtime* rt);
/* Record i; strings live as long as the runtime. */
GN_API gn_status* gn_runtime_plugin_get(const gn_runtime* rt, size_t i, gn_plugin_record* out);

/* ----------------------------------------------------------------- devices */

/* One registered device type. */
typedef struct gn_device_type_record {
  size_t struct_size;
  const char* name;    /* "cpu" */
  const char* backend; /* plugin serving it */
  int32_t id;          /* gn_device.type */
  int32_t device_count;
  int32_t score;
  uint32_t flags;        /* GN_DEVICE_* */
  const char* note;      /* why device_count is 0, or "" */
  const char* providers; /* every plugin providing it, comma-separated, best first */
} gn_device_type_record;

/* Number of device types. */
GN_API size_t gn_device_type_count(const gn_runtime* rt);
/* Device type i. */
GN_API gn_status* gn_device_type_get(const gn_runtime* rt, size_t i, gn_device_type_record* out);
/* Parse "cpu", "cuda", "cuda:1" into a device. */
GN_API gn_status* gn_device_parse(const gn_runtime* rt, const char* spec, gn_device* out);
/* Write "cuda:1" into buf (always NUL-terminated). */
GN_API void gn_device_format(const gn_runtime* rt, gn_device dev, char* buf, size_t cap);
/* Devices of a type by name (0 if the type is absent). */
GN_API int32_t gn_device_count(const gn_runtime* rt, const char* type_name);
/* Properties of a device. */
GN_API gn_status* gn_device_properties(gn_runtime* rt, gn_device dev, gn_device_props* out);
/* Wait for all work on the device. */
GN_API gn_status* gn_device_synchronize(gn_runtime* rt, gn_device dev);

/* ------------------------------------------------------------------ memory */

/* Allocator statistics of a device. */
GN_API gn_status* gn_memory_stats_get(gn_runtime* rt, gn_device dev, gn_memory_stats* out);
/* Return cached blocks to the system. */
GN_API gn_status* gn_memory_empty_cache(gn_runtime* rt, gn_device dev);
/* Reset peak_allocated / peak_reserved to the current values. */
GN_API gn_status* gn_memory_reset_peak(gn_runtime* rt, gn_device dev);

/* ----------------------------------------------------------------- streams */

/* New stream on a device. */
GN_API gn_status* gn_stream_create(gn_runtime* rt, gn_device dev, gn_stream** out);
/* Destroy a stream (not the current one). */
GN_API gn_status* gn_stream_destroy(gn_stream* s);
/* Wait for the stream's work. */
GN_API gn_status* gn_stream_synchronize(gn_stream* s);
/* Make s the stream ops on its device run on (NULL stream = device default). */
GN_API gn_status* gn_stream_set_current(gn_runtime* rt, gn_device dev, gn_stream* s);
/* Current stream of a device (NULL = default). */
GN_API gn_stream* gn_stream_get_current(gn_runtime* rt, gn_device dev);
/* Backend-native handle (cudaStream_t for cuda). */
GN_API void* gn_stream_native(const gn_stream* s);

/* New event. */
GN_API gn_status* gn_event_create(gn_runtime* rt, gn_device dev, gn_event** out);
/* Destroy an event. */
GN_API gn_status* gn_event_destroy(gn_event* e);
/* Record the event on s (NULL = current stream). */
GN_API gn_status* gn_event_record(gn_event* e, gn_stream* s);
/* Make s (NULL = current) wait for e. */
GN_API gn_status* gn_stream_wait_event(gn_stream* s, gn_event* e);
/* *done = 1 when the event has completed. */
GN_API gn_status* gn_event_query(gn_event* e, int32_t* done);
/* Block until the event completes. */
GN_API gn_status* gn_event_synchronize(gn_event* e);

/* Start capturing the work issued on the device's current stream. */
GN_API gn_status* gn_graph_begin(gn_runtime* rt, gn_device dev);
/* Stop capturing and return the graph. */
GN_API gn_status* gn_graph_end(gn_runtime* rt, gn_device dev, gn_graph** out);
/* Replay a graph on the current stream. */
GN_API gn_status* gn_graph_launch(gn_graph* g);
/* Destroy a graph. */
GN_API void gn_graph_destroy(gn_graph* g);

/* --------------------------------------------------------------------- RNG */

/* Seed every device's default generator (offset reset to 0). */
GN_API void gn_rng_manual_seed(gn_runtime* rt, uint64_t seed);
/* Read a device's default generator (seed, Philox offset); either pointer may
 * be NULL when that value is not wanted. */
GN_API gn_status* gn_rng_get_state(gn_runtime* rt, gn_device dev, uint64_t* seed, uint64_t* offset);
/* Set a device's default generator. */
GN_API gn_status* gn_rng_set_state(gn_runtime* rt, gn_device dev, uint64_t seed, uint64_t offset);
/* A private generator (for gn_call_options.generator). */
GN_API gn_status* gn_generator_create(gn_runtime* rt, uint64_t seed, gn_generator** out);
/* Free a generator. */
GN_API void gn_generator_destroy(gn_generator* g);
/* Read a generator's state. */
GN_API void gn_generator_get_state(const gn_generator* g, uint64_t* seed, uint64_t* offset);
/* Set a generator's state. */
GN_API void gn_generator_set_state(gn_generator* g, uint64_t seed, uint64_t offset);

/* ---------------------------------------------------------------- profiler */

/* Start recording every op call (name, device, shapes, host time). */
GN_API gn_status* gn_profiler_start(gn_runtime* rt);
/* Stop recording (events are kept until the next start). */
GN_API gn_status* gn_profiler_stop(gn_runtime* rt);
/* Write the recorded events as Chrome-trace JSON (atomically). */
GN_API gn_status* gn_profiler_export_chrome_trace(gn_runtime* rt, const char* path);
/* Per-op summary table into buf; *needed gets the full length + 1.  buf may
 * be NULL (nothing is written) and needed may be NULL (length not wanted). */
GN_API gn_status* gn_profiler_summary(gn_runtime* rt, char* buf, size_t cap, size_t* needed);

#ifdef __cplusplus
}
#endif

#endif /* GENESIS_RUNTIME_H */

/* hostdev.h - a minimal host-memory device type shared by the loader test
 * plugins (C99, ABI headers only).  Each plugin that includes it gets its own
 * copy of these statics: plugins share nothing, as in real life.
 *
 * Start gn_plugin_init with hostdev_init (the plugin info and one device
 * type), or set g_host before registering, then call hostdev_vtable(name,
 * score) and adjust the result.  Helpers are static inline
 * so a plugin that uses only some of them compiles warning-free. */
#ifndef GENESIS_TEST_HOSTDEV_H
#define GENESIS_TEST_HOSTDEV_H

#include <stdlib.h>
#include <string.h>

#include "genesis/plugin.h"

static const gn_host_api* g_host;
static uint64_t g_allocated; /* bytes live, for memory_stats */
static uint64_t g_num_allocs;
static uint64_t g_num_frees;

static inline gn_status* hostdev_count(void* ctx, int32_t* count) {
  (void)ctx;
  *count = 1;
  return NULL;
}

static inline gn_status* hostdev_props(void* ctx, int32_t index, gn_device_props* props) {
  (void)ctx;
  if (index != 0) return g_host->status_new(GN_ERR_INDEX, "hostdev: only device 0 exists");
  /* Honour the caller's struct_size: write only fields it has room for. */
  if (props->struct_size >= GN_STRUCT_END(gn_device_props, name)) strcpy(props->name, "loader-test host memory");
  if (props->struct_size >= GN_STRUCT_END(gn_device_props, total_memory)) props->total_memory = (uint64_t)1 << 30;
  if (props->struct_size >= GN_STRUCT_END(gn_device_props, free_memory)) props->free_memory = (uint64_t)1 << 29;
  if (props->struct_size >= GN_STRUCT_END(gn_device_props, multiprocessors)) props->multiprocessors = 1;
  return NULL;
}

static inline gn_status* hostdev_alloc(void* ctx, int32_t index, size_t bytes, void* stream, void** ptr) {
  (void)ctx;
  (void)index;
  (void)stream;
  *ptr = NULL;
  if (bytes == 0) return NULL;
  /* Stash the size in front of the block so free can keep the stats. */
  {
    size_t* block = (size_t*)malloc(bytes + 16);
    if (!block) return g_host->status_new(GN_ERR_OUT_OF_MEMORY, "hostdev: malloc failed");
    block[0] = bytes;
    g_allocated += bytes;
    ++g_num_allocs;
    *ptr = (char*)block + 16;
  }
  return NULL;
}

static inline gn_status* hostdev_free(void* ctx, int32_t index, void* ptr, void* stream) {
  (void)ctx;
  (void)index;
  (void)stream;
  if (ptr) {
    size_t* block = (size_t*)((char*)ptr - 16);
    g_allocated -= block[0];
    ++g_num_frees;
    free(block);
  }
  return NULL;
}

static inline gn_status* hostdev_stats(void* ctx, int32_t index, gn_memory_stats* stats) {
  (void)ctx;
  (void)index;
  if (stats->struct_size >= GN_STRUCT_END(gn_memory_stats, num_frees)) {
    stats->allocated = g_allocated;
    stats->reserved = g_allocated;
    stats->num_allocs = g_num_allocs;
    stats->num_frees = g_num_frees;
  }
  return NULL;
}

static inline gn_status* hostdev_sync(void* ctx, int32_t index, void* stream) {
  (void)ctx;
  (void)index;
  (void)stream;
  return NULL;
}

static inline gn_status* hostdev_device_sync(void* ctx, int32_t index) {
  (void)ctx;
  (void)index;
  return NULL;
}

static inline gn_status* hostdev_copy(void* ctx, int32_t index, void* dst, const void* src, size_t bytes, int32_t kind,
                                      void* stream) {
  (void)ctx;
  (void)index;
  (void)kind;
  (void)stream;
  if (bytes) memmove(dst, src, bytes);
  return NULL;
}

static inline gn_status* hostdev_memset(void* ctx, int32_t index, void* dst, int32_t value, size_t bytes,
                                        void* stream) {
  (void)ctx;
  (void)index;
  (void)stream;
  if (bytes) memset(dst, value, bytes);
  return NULL;
}

/* A full-size (current minor) vtable for a synchronous host-memory device
 * without streams, events or graphs. */
static inline gn_device_vtable hostdev_vtable(const char* name, int32_t score) {
  gn_device_vtable v;
  memset(&v, 0, sizeof v);
  v.struct_size = sizeof v;
  v.name = name;
  v.score = score;
  v.flags = GN_DEVICE_HOST_MEMORY;
  v.device_count = hostdev_count;
  v.device_props = hostdev_props;
  v.alloc = hostdev_alloc;
  v.free = hostdev_free;
  v.memory_stats = hostdev_stats;
  v.stream_synchronize = hostdev_sync;
  v.device_synchronize = hostdev_device_sync;
  v.copy = hostdev_copy;
  v.memset = hostdev_memset;
  return v;
}

/* Elementwise f32 kernel body: out[i] = f(in[i]) over contiguous views. */
#define HOSTDEV_UNARY_F32(fn_name, expr)                                                                           \
  static gn_status* fn_name(const gn_kernel_ctx* ctx, const gn_tensor_view* in, size_t n_in,                       \
                            const gn_tensor_view* out, size_t n_out, const gn_attr_value* attrs, size_t n_attrs) { \
    const float* src = (const float*)gn_view_ptr(&in[0]);                                                          \
    float* dst = (float*)gn_view_ptr(&out[0]);                                                                     \
    int64_t i, n = gn_view_numel(&out[0]);                                                                         \
    (void)ctx;                                                                                                     \
    (void)n_in;                                                                                                    \
    (void)n_out;                                                                                                   \
    (void)attrs;                                                                                                   \
    (void)n_attrs;                                                                                                 \
    for (i = 0; i < n; ++i) {                                                                                      \
      float x = src[i];                                                                                            \
      dst[i] = (expr);                                                                                             \
    }                                                                                                              \
    return NULL;                                                                                                   \
  }

/* Register `fn` for (op, device_type, f32), contiguous. */
static inline gn_status* hostdev_kernel(const char* op, const char* device_type, gn_kernel_fn fn) {
  gn_kernel_desc k;
  memset(&k, 0, sizeof k);
  k.struct_size = sizeof k;
  k.op = op;
  k.device_type = device_type;
  k.dtype = GN_F32;
  k.flags = GN_KERNEL_CONTIGUOUS;
  k.fn = fn;
  return g_host->register_kernel(g_host->host_ctx, &k);
}

/* Fill the plugin info with the current ABI version. */
static inline void hostdev_info(gn_plugin_info* info, const char* name, const char* version) {
  info->abi_major = GN_ABI_VERSION_MAJOR;
  info->abi_minor = GN_ABI_VERSION_MINOR;
  info->name = name;
  info->version = version;
  info->description = "loader test plugin";
}

/* Start gn_plugin_init: keep the host table, fill the plugin info (name, version, the current ABI)
 * and register the host-memory device type `device` with this score. */
static inline gn_status* hostdev_init(const gn_host_api* host, gn_plugin_info* info, const char* name,
                                      const char* version, const char* device, int32_t score) {
  gn_device_vtable vt;
  g_host = host;
  hostdev_info(info, name, version);
  vt = hostdev_vtable(device, score);
  return host->register_device_type(host->host_ctx, &vt);
}

/* Shape inference of an op with one output like its first input. */
static inline gn_status* hostdev_same_as_input(const gn_infer_ctx* ctx, const gn_tensor_meta* in, size_t n_in,
                                               const gn_attr_value* attrs, size_t n_attrs, gn_infer_result* result) {
  (void)ctx;
  (void)n_in;
  (void)attrs;
  (void)n_attrs;
  result->n_out = 1;
  result->out[0] = in[0];
  return NULL;
}

/* Register the op schema `name`: n_inputs inputs, one output like the first input. */
static inline gn_status* hostdev_op(const char* name, int32_t n_inputs, const char* doc) {
  gn_op_schema op;
  memset(&op, 0, sizeof op);
  op.struct_size = sizeof op;
  op.name = name;
  op.min_inputs = n_inputs;
  op.max_inputs = n_inputs;
  op.max_outputs = 1;
  op.infer = hostdev_same_as_input;
  op.doc = doc;
  return g_host->register_op(g_host->host_ctx, &op);
}

#endif /* GENESIS_TEST_HOSTDEV_H */

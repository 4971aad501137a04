/* genesis/device.h - devices and the device-type vtable a backend provides.
 *
 * A device type ("cpu", "cuda") is registered by a backend plugin through
 * gn_host_api.register_device_type.  Several plugins may provide the same type
 * (the reference plugin and the oneDNN plugin both provide "cpu"); the highest
 * score wins unless the runtime options name a backend.  All providers of one
 * type must agree on what a pointer means (host memory for "cpu").
 */
#ifndef GENESIS_DEVICE_H
#define GENESIS_DEVICE_H

#include "genesis/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A device: the runtime's id of its type plus an ordinal.  Value type, frozen. */
typedef struct gn_device {
  int32_t type;  /* device-type id assigned by the runtime (gn_device_parse) */
  int32_t index; /* ordinal within the type, 0-based */
} gn_device;

/* Device properties reported by a backend. */
typedef struct gn_device_props {
  size_t struct_size;
  char name[128];        /* e.g. "NVIDIA H100 80GB HBM3", "host" */
  uint64_t total_memory; /* bytes, 0 if unknown */
  uint64_t free_memory;  /* bytes, 0 if unknown */
  int32_t compute_major; /* e.g. 9 for sm_90; 0 for CPUs */
  int32_t compute_minor;
  int32_t multiprocessors; /* SMs, or CPU cores */
  int32_t reserved;
} gn_device_props;

/* Allocator statistics, bytes and counts since creation (peaks since last reset). */
typedef struct gn_memory_stats {
  size_t struct_size;
  uint64_t allocated; /* bytes handed out and not yet freed */
  uint64_t reserved;  /* bytes held from the system (allocated + cached) */
  uint64_t peak_allocated;
  uint64_t peak_reserved;
  uint64_t num_allocs;
  uint64_t num_frees;
  uint64_t cache_hits;    /* allocations served from the cache */
  uint64_t cache_misses;  /* allocations that went to the system */
  uint64_t oom_retries;   /* times the cache was flushed to retry an allocation */
  uint64_t active_blocks; /* live allocations */
} gn_memory_stats;

/* Direction of gn_device_vtable.copy. */
typedef enum gn_copy_kind {
  GN_COPY_HOST_TO_DEVICE = 0,
  GN_COPY_DEVICE_TO_HOST = 1,
  GN_COPY_DEVICE_TO_DEVICE = 2
} gn_copy_kind;

/* gn_device_vtable.flags */
#define GN_DEVICE_HOST_MEMORY 0x1u /* device pointers are plain host pointers */

/* What a backend implements for one device type.  Slots may be NULL where the
 * comment says optional.  `ctx` is passed back as the first argument.  Streams,
 * events and graphs are the backend's native handles (NULL stream = default). */
typedef struct gn_device_vtable {
  size_t struct_size;
  const char* name; /* device type name, e.g. "cuda"; copied by the host */
  int32_t score;    /* higher wins among providers of the same type */
  uint32_t flags;   /* GN_DEVICE_* */
  void* ctx;

  /* Number of devices; on failure the status message is shown as the reason. */
  gn_status* (*device_count)(void* ctx, int32_t* count);
  /* Fill props (props->struct_size set by the caller). */
  gn_status* (*device_props)(void* ctx, int32_t index, gn_device_props* props);

  /* Allocator: stream-ordered on `stream`; size 0 may return NULL. */
  gn_status* (*alloc)(void* ctx, int32_t index, size_t bytes, void* stream, void** ptr);
  gn_status* (*free)(void* ctx, int32_t index, void* ptr, void* stream);
  gn_status* (*memory_stats)(void* ctx, int32_t index, gn_memory_stats* stats);
  gn_status* (*empty_cache)(void* ctx, int32_t index);      /* optional */
  gn_status* (*reset_peak_stats)(void* ctx, int32_t index); /* optional */

  /* Streams and events (optional for synchronous host backends). */
  gn_status* (*stream_create)(void* ctx, int32_t index, void** stream);
  gn_status* (*stream_destroy)(void* ctx, int32_t index, void* stream);
  gn_status* (*stream_synchronize)(void* ctx, int32_t index, void* stream);
  gn_status* (*event_create)(void* ctx, int32_t index, void** event);
  gn_status* (*event_destroy)(void* ctx, int32_t index, void* event);
  gn_status* (*event_record)(void* ctx, int32_t index, void* event, void* stream);
  gn_status* (*stream_wait_event)(void* ctx, int32_t index, void* stream, void* event);
  gn_status* (*event_query)(void* ctx, int32_t index, void* event, int32_t* done);
  gn_status* (*event_synchronize)(void* ctx, int32_t index, void* event);
  gn_status* (*device_synchronize)(void* ctx, int32_t index);

  /* Copies of `bytes` bytes, async on `stream`.  Host pointers are plain. */
  gn_status* (*copy)(void* ctx, int32_t index, void* dst, const void* src, size_t bytes, int32_t kind, void* stream);
  /* Set `bytes` bytes at dst to `byte_value` (memset), async on stream. */
  gn_status* (*memset)(void* ctx, int32_t index, void* dst, int32_t byte_value, size_t bytes, void* stream);

  /* ---- minor 1: optional graph capture (NULL = unsupported) ---- */
  gn_status* (*graph_begin)(void* ctx, int32_t index, void* stream);
  gn_status* (*graph_end)(void* ctx, int32_t index, void* stream, void** graph);
  gn_status* (*graph_launch)(void* ctx, int32_t index, void* graph, void* stream);
  gn_status* (*graph_destroy)(void* ctx, int32_t index, void* graph);
} gn_device_vtable;

/* struct_size of a minor-0 vtable (everything before the graph slots). */
#define GN_DEVICE_VTABLE_SIZE_V1_0 GN_STRUCT_END(gn_device_vtable, memset)

#ifdef __cplusplus
}
#endif

#endif /* GENESIS_DEVICE_H */

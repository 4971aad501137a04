/* genesis/comm.h - the communicator extension: collectives and point-to-point
 * transfers between the ranks of a job (the nccl and gloo plugins).  A plugin
 * registers a gn_comm_vtable with gn_host_api.register_comm; programs reach it
 * through the gn_comm_* functions at the end of this header.
 *
 * Ordering: every call is enqueued on `stream` (a native stream of the
 * communicator's device type) and may return before the transfer is done,
 * like a kernel launch; record a device event after it to observe completion.
 * A communicator whose device has no asynchronous streams (gloo on cpu)
 * finishes the work before returning.  A peer that dies or stops answering
 * never hangs a caller forever: the call, or `synchronize`, fails with
 * GN_ERR_TIMEOUT or GN_ERR_ABORTED, and the communicator stays failed. */
#ifndef GENESIS_COMM_H
#define GENESIS_COMM_H

#include "genesis/runtime.h"
#include "genesis/tensor.h"
#include "genesis/view.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Opaque bootstrap id shared by all ranks out of band (128 bytes like NCCL's). */
typedef struct gn_comm_id {
  char bytes[128];
} gn_comm_id;

typedef enum gn_reduce_op {
  GN_REDUCE_SUM = 0,
  GN_REDUCE_PROD = 1,
  GN_REDUCE_MAX = 2,
  GN_REDUCE_MIN = 3,
  GN_REDUCE_AVG = 4
} gn_reduce_op;

/* A key-value store every rank reaches (the frontend's TCP store); rendezvous
 * runs over it (gloo exchanges its addresses there).  Keys are NUL-terminated. */
typedef struct gn_comm_store {
  size_t struct_size;
  void* ctx;
  /* Set key to the n bytes at value (copied). */
  gn_status* (*set)(void* ctx, const char* key, const void* value, size_t n);
  /* Wait up to timeout_ms for key (GN_ERR_TIMEOUT after), copy min(cap, size)
   * bytes into value and set *n to its size; ask again with a larger buffer
   * when *n > cap. */
  gn_status* (*get)(void* ctx, const char* key, void* value, size_t cap, size_t* n, int64_t timeout_ms);
} gn_comm_store;

/* How to join a communicator (gn_comm_vtable.init).  Zero-initialise, set struct_size. */
typedef struct gn_comm_config {
  size_t struct_size;
  int32_t rank; /* 0 .. world_size-1 */
  int32_t world_size;
  int32_t device_index; /* the device of the communicator's type this rank uses */
  int32_t reserved;
  int64_t timeout_ms;         /* how long a call waits on a peer before failing (<= 0: 30 min) */
  const gn_comm_id* id;       /* from unique_id on rank 0, shared out of band; NULL if none */
  const gn_comm_store* store; /* the ranks' store (borrowed during init); may be NULL with an id */
  const char* prefix;         /* store keys of this communicator start with it ("" or NULL: none) */
  const char* local_address;  /* address of this host the others can reach (NULL: the plugin picks) */
} gn_comm_config;

/* Collectives over one device type, ordered on `stream` (see the top). */
typedef struct gn_comm_vtable {
  size_t struct_size;
  const char* name;        /* e.g. "nccl" */
  const char* device_type; /* device type whose memory it moves, e.g. "cuda" */
  void* ctx;
  gn_status* (*unique_id)(void* ctx, gn_comm_id* id);
  gn_status* (*create)(void* ctx, const gn_comm_id* id, int32_t rank, int32_t world_size, int32_t device_index,
                       void** comm);
  gn_status* (*destroy)(void* ctx, void* comm);
  gn_status* (*all_reduce)(void* ctx, void* comm, const gn_tensor_view* send, const gn_tensor_view* recv, int32_t op,
                           void* stream);
  gn_status* (*broadcast)(void* ctx, void* comm, const gn_tensor_view* buf, int32_t root, void* stream);
  gn_status* (*all_gather)(void* ctx, void* comm, const gn_tensor_view* send, const gn_tensor_view* recv, void* stream);
  gn_status* (*reduce_scatter)(void* ctx, void* comm, const gn_tensor_view* send, const gn_tensor_view* recv,
                               int32_t op, void* stream);
  gn_status* (*barrier)(void* ctx, void* comm, void* stream);

  /* ---- minor 2: configured creation, point-to-point, all_to_all, failure handling
   * (NULL = unsupported) ---- */
  /* Join the communicator described by config (rendezvous over config->store
   * and/or config->id); blocks until every rank joined or the timeout passes. */
  gn_status* (*init)(void* ctx, const gn_comm_config* config, void** comm);
  /* Send buf to rank `peer`; matched by the recv of that peer with the same tag. */
  gn_status* (*send)(void* ctx, void* comm, const gn_tensor_view* buf, int32_t peer, int32_t tag, void* stream);
  /* Receive into buf from rank `peer`. */
  gn_status* (*recv)(void* ctx, void* comm, const gn_tensor_view* buf, int32_t peer, int32_t tag, void* stream);
  /* send is world_size equal chunks; chunk j goes to rank j, and recv's chunk i
   * comes from rank i. */
  gn_status* (*all_to_all)(void* ctx, void* comm, const gn_tensor_view* send, const gn_tensor_view* recv, void* stream);
  /* Wait for the communicator's work on stream; after timeout_ms (<= 0: the
   * config's timeout) without progress the communicator is aborted and the
   * call fails with GN_ERR_TIMEOUT. */
  gn_status* (*synchronize)(void* ctx, void* comm, void* stream, int64_t timeout_ms);
  /* Abort: pending and later calls fail with GN_ERR_ABORTED (any thread may call it). */
  gn_status* (*abort)(void* ctx, void* comm);
  /* The communicator's failure so far (a copy), or NULL while it is healthy. */
  gn_status* (*error)(void* ctx, void* comm);
} gn_comm_vtable;

/* gn_comm_vtable's struct_size in minor 1 (every slot up to barrier). */
#define GN_COMM_VTABLE_SIZE_V1_1 GN_STRUCT_END(gn_comm_vtable, barrier)

/* ------------------------------------------------------------ public C API
 * A gn_comm is this process's member of one communicator.  Tensors must be
 * contiguous and on the communicator's device type; stream NULL = the current
 * stream of the tensor's device.  send/recv of all_reduce may be the same
 * tensor (in place). */

typedef struct gn_comm gn_comm;

/* Name of the communicator backend serving a device type ("gloo" for "cpu"), NULL if none. */
GN_API const char* gn_comm_backend_for(gn_runtime* rt, const char* device_type);
/* New bootstrap id from a backend ("nccl", or a device type); GN_ERR_UNSUPPORTED if it needs none. */
GN_API gn_status* gn_comm_unique_id(gn_runtime* rt, const char* backend, gn_comm_id* out);
/* Join a communicator of a backend (a name like "gloo", or a device type); blocks for the rendezvous. */
GN_API gn_status* gn_comm_create(gn_runtime* rt, const char* backend, const gn_comm_config* config, gn_comm** out);
/* Leave and free a communicator (NULL is fine); does not wait for peers. */
GN_API void gn_comm_destroy(gn_comm* comm);
/* This process's rank in the communicator (-1 for NULL). */
GN_API int32_t gn_comm_rank(const gn_comm* comm);
/* Number of ranks (0 for NULL). */
GN_API int32_t gn_comm_size(const gn_comm* comm);
/* Backend name, e.g. "gloo" ("" for NULL). */
GN_API const char* gn_comm_backend(const gn_comm* comm);
/* recv = op over the ranks' send (same shape and dtype; recv may be send). */
GN_API gn_status* gn_comm_all_reduce(gn_comm* comm, gn_tensor* send, gn_tensor* recv, int32_t op, gn_stream* stream);
/* Every rank's buf becomes root's buf. */
GN_API gn_status* gn_comm_broadcast(gn_comm* comm, gn_tensor* buf, int32_t root, gn_stream* stream);
/* recv (world_size * numel(send) elements) = the ranks' send, in rank order. */
GN_API gn_status* gn_comm_all_gather(gn_comm* comm, gn_tensor* send, gn_tensor* recv, gn_stream* stream);
/* recv = chunk `rank` of op over the ranks' send (numel(send) = world_size * numel(recv)). */
GN_API gn_status* gn_comm_reduce_scatter(gn_comm* comm, gn_tensor* send, gn_tensor* recv, int32_t op,
                                         gn_stream* stream);
/* Chunk j of send goes to rank j; chunk i of recv comes from rank i (equal numel, divisible by world_size). */
GN_API gn_status* gn_comm_all_to_all(gn_comm* comm, gn_tensor* send, gn_tensor* recv, gn_stream* stream);
/* Send buf to rank peer (matched by its gn_comm_recv with the same tag). */
GN_API gn_status* gn_comm_send(gn_comm* comm, gn_tensor* buf, int32_t peer, int32_t tag, gn_stream* stream);
/* Receive into buf from rank peer. */
GN_API gn_status* gn_comm_recv(gn_comm* comm, gn_tensor* buf, int32_t peer, int32_t tag, gn_stream* stream);
/* Wait until every rank reached the barrier. */
GN_API gn_status* gn_comm_barrier(gn_comm* comm, gn_stream* stream);
/* Wait for the communicator's work on stream; GN_ERR_TIMEOUT (and abort) after timeout_ms without progress. */
GN_API gn_status* gn_comm_synchronize(gn_comm* comm, gn_stream* stream, int64_t timeout_ms);
/* Abort: pending and later calls of every rank's thread fail with GN_ERR_ABORTED. */
GN_API gn_status* gn_comm_abort(gn_comm* comm);
/* The communicator's failure so far (the caller frees it), NULL while healthy. */
GN_API gn_status* gn_comm_error(gn_comm* comm);

#ifdef __cplusplus
}
#endif

#endif /* GENESIS_COMM_H */

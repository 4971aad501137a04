/* genesis/comm.h - the communicator extension (collectives; the NCCL plugin).
 * Registered with gn_host_api.register_comm; reached through the C API. */
#ifndef GENESIS_COMM_H
#define GENESIS_COMM_H

#include "genesis/view.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Opaque bootstrap id shared by all ranks out of band (128 bytes like NCCL's). */
typedef struct gn_comm_id {
  char bytes[128];
} gn_comm_id;

typedef enum gn_reduce_op { GN_REDUCE_SUM = 0, GN_REDUCE_PROD = 1, GN_REDUCE_MAX = 2,
                            GN_REDUCE_MIN = 3, GN_REDUCE_AVG = 4 } gn_reduce_op;

/* Collectives over one device type.  All calls are async on `stream`. */
typedef struct gn_comm_vtable {
  size_t struct_size;
  const char* name;        /* e.g. "nccl" */
  const char* device_type; /* device type whose memory it moves, e.g. "cuda" */
  void* ctx;
  gn_status* (*unique_id)(void* ctx, gn_comm_id* id);
  gn_status* (*create)(void* ctx, const gn_comm_id* id, int32_t rank, int32_t world_size,
                       int32_t device_index, void** comm);
  gn_status* (*destroy)(void* ctx, void* comm);
  gn_status* (*all_reduce)(void* ctx, void* comm, const gn_tensor_view* send,
                           const gn_tensor_view* recv, int32_t op, void* stream);
  gn_status* (*broadcast)(void* ctx, void* comm, const gn_tensor_view* buf, int32_t root,
                          void* stream);
  gn_status* (*all_gather)(void* ctx, void* comm, const gn_tensor_view* send,
                           const gn_tensor_view* recv, void* stream);
  gn_status* (*reduce_scatter)(void* ctx, void* comm, const gn_tensor_view* send,
                               const gn_tensor_view* recv, int32_t op, void* stream);
  gn_status* (*barrier)(void* ctx, void* comm, void* stream);
} gn_comm_vtable;

#ifdef __cplusplus
}
#endif

#endif /* GENESIS_COMM_H */

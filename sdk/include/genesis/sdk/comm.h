// genesis/sdk/comm.h - filling a gn_comm_vtable from a plugin's comm_* functions.
#pragma once

#include "genesis/comm.h"

// Sets every slot of the gn_comm_vtable `v` from the functions of the same
// name with a comm_ prefix in scope (comm_create, comm_destroy, ...,
// comm_error), and its struct_size; name, device_type and unique_id are the
// plugin's to set.
// clang-format off
#define GN_SDK_COMM_SLOTS(v)                                                                        \
  do {                                                                                              \
    (v).struct_size = sizeof(gn_comm_vtable);                                                       \
    (v).create = comm_create; (v).destroy = comm_destroy; (v).all_reduce = comm_all_reduce;         \
    (v).broadcast = comm_broadcast; (v).all_gather = comm_all_gather;                               \
    (v).reduce_scatter = comm_reduce_scatter; (v).barrier = comm_barrier; (v).init = comm_init;     \
    (v).send = comm_send; (v).recv = comm_recv; (v).all_to_all = comm_all_to_all;                   \
    (v).synchronize = comm_synchronize; (v).abort = comm_abort; (v).error = comm_error;             \
  } while (0)
// clang-format on

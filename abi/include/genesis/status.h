/* genesis/status.h - errors across the boundary.
 *
 * Every fallible call returns gn_status*: NULL means OK.  A non-NULL status is
 * an opaque object created by the host (gn_host_api.status_new or the core) and
 * released by whoever receives it, with gn_status_free / host->status_free.
 */
#ifndef GENESIS_STATUS_H
#define GENESIS_STATUS_H

#include "genesis/version.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gn_status gn_status;

/* Stable error codes; values never change within a major version. */
typedef enum gn_code {
  GN_OK = 0,
  GN_ERR_INVALID_ARGUMENT = 1, /* bad value, bad attribute, bad handle */
  GN_ERR_SHAPE = 2,            /* shapes do not agree */
  GN_ERR_DTYPE = 3,            /* dtype not allowed for this op */
  GN_ERR_DEVICE = 4,           /* wrong or mismatched device, device failure */
  GN_ERR_NOT_FOUND = 5,        /* unknown op, device type, plugin, file */
  GN_ERR_UNSUPPORTED = 6,      /* valid request this kernel/backend cannot serve: try another */
  GN_ERR_OUT_OF_MEMORY = 7,
  GN_ERR_INDEX = 8,           /* index out of range */
  GN_ERR_VERSION = 9,         /* ABI version mismatch */
  GN_ERR_IO = 10,             /* file or stream I/O */
  GN_ERR_ALREADY_EXISTS = 11, /* duplicate op / kernel / device type */
  GN_ERR_INTERNAL = 12,       /* a bug: please report */
  /* minor 2 */
  GN_ERR_TIMEOUT = 13, /* a peer (or the rendezvous) did not answer in time */
  GN_ERR_ABORTED = 14  /* a communicator was aborted or lost a peer */
} gn_code;

#ifdef __cplusplus
}
#endif

#endif /* GENESIS_STATUS_H */

/* genesis/version.h - ABI version, export macros and fixed limits.
 *
 * Versioning rule (docs/abi.md): the MAJOR must match exactly between host and
 * plugin; the MINOR is negotiated: each side uses min(host_minor, plugin_minor)
 * and gates newer struct fields / table slots on it.  Minor bumps only append.
 */
#ifndef GENESIS_VERSION_H
#define GENESIS_VERSION_H

#include <stddef.h>
#include <stdint.h>

#define GN_ABI_VERSION_MAJOR 1
/* Minor history: 0 = initial; 1 = gn_device_vtable graph-capture slots;
 * 2 = gn_comm_vtable init/send/recv/all_to_all/synchronize/abort/error, the
 * gn_comm_* C API, GN_ERR_TIMEOUT and GN_ERR_ABORTED; 3 = gn_plugin_info
 * set_option/get_option and gn_runtime_set_option, gn_runtime_get_option,
 * gn_runtime_set_num_threads, gn_runtime_num_threads. */
#define GN_ABI_VERSION_MINOR 3

/* Maximum tensor rank carried in fixed-size metadata (gn_tensor_meta). */
#define GN_MAX_DIMS 8

/* Symbols exported by libgenesis (GN_API) and by plugins (GN_PLUGIN_EXPORT). */
#if defined(_WIN32)
#define GN_EXPORT_ATTR __declspec(dllexport)
#else
#define GN_EXPORT_ATTR __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
#define GN_EXTERN_C extern "C"
#else
#define GN_EXTERN_C
#endif

#define GN_API GN_EXTERN_C GN_EXPORT_ATTR
#define GN_PLUGIN_EXPORT GN_EXTERN_C GN_EXPORT_ATTR

/* Offset of the end of `field` in `type`: the struct_size a reader compares
 * against before touching `field` (PJRT's STRUCT_SIZE idea). */
#define GN_STRUCT_END(type, field) (offsetof(type, field) + sizeof(((type*)0)->field))

#endif /* GENESIS_VERSION_H */

// abi_layout_test.cpp - pins the ABI v1 memory layout on x86-64 (LP64).
//
// Every slot of the function tables (gn_host_api, gn_device_vtable,
// gn_comm_vtable) and every field of the frozen value structs is listed with
// its byte offset as a literal number.  A change that moves a slot fails to
// compile (static_assert) and, should the assert be edited away, fails at run
// time too.  Minor versions may only APPEND: add rows at the end, never change
// a number here.
#include <gtest/gtest.h>

#include <cstddef>
#include <string>

#include "genesis/genesis.h"

namespace {

#if defined(__x86_64__) && defined(__LP64__)
#define GENESIS_PIN_LAYOUT 1
#else
#define GENESIS_PIN_LAYOUT 0
#endif

// X(type, field, byte offset) for each table/struct, in declaration order.
#define HOST_API_LAYOUT(X)                 \
  X(gn_host_api, struct_size, 0)           \
  X(gn_host_api, abi_major, 8)             \
  X(gn_host_api, abi_minor, 12)            \
  X(gn_host_api, host_ctx, 16)             \
  X(gn_host_api, status_new, 24)           \
  X(gn_host_api, status_code, 32)          \
  X(gn_host_api, status_message, 40)       \
  X(gn_host_api, status_free, 48)          \
  X(gn_host_api, register_device_type, 56) \
  X(gn_host_api, register_op, 64)          \
  X(gn_host_api, register_kernel, 72)      \
  X(gn_host_api, register_comm, 80)        \
  X(gn_host_api, option_get, 88)           \
  X(gn_host_api, log, 96)

#define DEVICE_VTABLE_LAYOUT(X)                                                \
  X(gn_device_vtable, struct_size, 0)                                          \
  X(gn_device_vtable, name, 8)                                                 \
  X(gn_device_vtable, score, 16)                                               \
  X(gn_device_vtable, flags, 20)                                               \
  X(gn_device_vtable, ctx, 24)                                                 \
  X(gn_device_vtable, device_count, 32)                                        \
  X(gn_device_vtable, device_props, 40)                                        \
  X(gn_device_vtable, alloc, 48)                                               \
  X(gn_device_vtable, free, 56)                                                \
  X(gn_device_vtable, memory_stats, 64)                                        \
  X(gn_device_vtable, empty_cache, 72)                                         \
  X(gn_device_vtable, reset_peak_stats, 80)                                    \
  X(gn_device_vtable, stream_create, 88)                                       \
  X(gn_device_vtable, stream_destroy, 96)                                      \
  X(gn_device_vtable, stream_synchronize, 104)                                 \
  X(gn_device_vtable, event_create, 112)                                       \
  X(gn_device_vtable, event_destroy, 120)                                      \
  X(gn_device_vtable, event_record, 128)                                       \
  X(gn_device_vtable, stream_wait_event, 136)                                  \
  X(gn_device_vtable, event_query, 144)                                        \
  X(gn_device_vtable, event_synchronize, 152)                                  \
  X(gn_device_vtable, device_synchronize, 160)                                 \
  X(gn_device_vtable, copy, 168)                                               \
  X(gn_device_vtable, memset, 176)                                             \
  /* minor 1 appended the graph slots */ X(gn_device_vtable, graph_begin, 184) \
  X(gn_device_vtable, graph_end, 192)                                          \
  X(gn_device_vtable, graph_launch, 200)                                       \
  X(gn_device_vtable, graph_destroy, 208)

#define COMM_VTABLE_LAYOUT(X)                                                                                 \
  X(gn_comm_vtable, struct_size, 0)                                                                           \
  X(gn_comm_vtable, name, 8)                                                                                  \
  X(gn_comm_vtable, device_type, 16)                                                                          \
  X(gn_comm_vtable, ctx, 24)                                                                                  \
  X(gn_comm_vtable, unique_id, 32)                                                                            \
  X(gn_comm_vtable, create, 40)                                                                               \
  X(gn_comm_vtable, destroy, 48)                                                                              \
  X(gn_comm_vtable, all_reduce, 56)                                                                           \
  X(gn_comm_vtable, broadcast, 64)                                                                            \
  X(gn_comm_vtable, all_gather, 72)                                                                           \
  X(gn_comm_vtable, reduce_scatter, 80)                                                                       \
  X(gn_comm_vtable, barrier, 88)                                                                              \
  /* minor 2 appended configured creation, point-to-point and failure handling */ X(gn_comm_vtable, init, 96) \
  X(gn_comm_vtable, send, 104)                                                                                \
  X(gn_comm_vtable, recv, 112)                                                                                \
  X(gn_comm_vtable, all_to_all, 120)                                                                          \
  X(gn_comm_vtable, synchronize, 128)                                                                         \
  X(gn_comm_vtable, abort, 136)                                                                               \
  X(gn_comm_vtable, error, 144)

#define COMM_STORE_LAYOUT(X)       \
  X(gn_comm_store, struct_size, 0) \
  X(gn_comm_store, ctx, 8)         \
  X(gn_comm_store, set, 16)        \
  X(gn_comm_store, get, 24)

#define COMM_CONFIG_LAYOUT(X)         \
  X(gn_comm_config, struct_size, 0)   \
  X(gn_comm_config, rank, 8)          \
  X(gn_comm_config, world_size, 12)   \
  X(gn_comm_config, device_index, 16) \
  X(gn_comm_config, reserved, 20)     \
  X(gn_comm_config, timeout_ms, 24)   \
  X(gn_comm_config, id, 32)           \
  X(gn_comm_config, store, 40)        \
  X(gn_comm_config, prefix, 48)       \
  X(gn_comm_config, local_address, 56)

#define PLUGIN_INFO_LAYOUT(X)        \
  X(gn_plugin_info, struct_size, 0)  \
  X(gn_plugin_info, abi_major, 8)    \
  X(gn_plugin_info, abi_minor, 12)   \
  X(gn_plugin_info, name, 16)        \
  X(gn_plugin_info, version, 24)     \
  X(gn_plugin_info, description, 32) \
  X(gn_plugin_info, ctx, 40)         \
  X(gn_plugin_info, shutdown, 48)    \
  /* minor 3 appended options after load */ X(gn_plugin_info, set_option, 56) X(gn_plugin_info, get_option, 64)

#define DEVICE_LAYOUT(X) \
  X(gn_device, type, 0)  \
  X(gn_device, index, 4)

#define DEVICE_PROPS_LAYOUT(X)             \
  X(gn_device_props, struct_size, 0)       \
  X(gn_device_props, name, 8)              \
  X(gn_device_props, total_memory, 136)    \
  X(gn_device_props, free_memory, 144)     \
  X(gn_device_props, compute_major, 152)   \
  X(gn_device_props, compute_minor, 156)   \
  X(gn_device_props, multiprocessors, 160) \
  X(gn_device_props, reserved, 164)

#define MEMORY_STATS_LAYOUT(X)           \
  X(gn_memory_stats, struct_size, 0)     \
  X(gn_memory_stats, allocated, 8)       \
  X(gn_memory_stats, reserved, 16)       \
  X(gn_memory_stats, peak_allocated, 24) \
  X(gn_memory_stats, peak_reserved, 32)  \
  X(gn_memory_stats, num_allocs, 40)     \
  X(gn_memory_stats, num_frees, 48)      \
  X(gn_memory_stats, cache_hits, 56)     \
  X(gn_memory_stats, cache_misses, 64)   \
  X(gn_memory_stats, oom_retries, 72)    \
  X(gn_memory_stats, active_blocks, 80)

#define TENSOR_VIEW_LAYOUT(X)    \
  X(gn_tensor_view, data, 0)     \
  X(gn_tensor_view, device, 8)   \
  X(gn_tensor_view, ndim, 16)    \
  X(gn_tensor_view, dtype, 20)   \
  X(gn_tensor_view, shape, 24)   \
  X(gn_tensor_view, strides, 32) \
  X(gn_tensor_view, byte_offset, 40)

#define TENSOR_META_LAYOUT(X)  \
  X(gn_tensor_meta, dtype, 0)  \
  X(gn_tensor_meta, ndim, 4)   \
  X(gn_tensor_meta, shape, 8)  \
  X(gn_tensor_meta, flags, 72) \
  X(gn_tensor_meta, reserved, 76)

#define ATTR_VALUE_LAYOUT(X)    \
  X(gn_attr_value, kind, 0)     \
  X(gn_attr_value, reserved, 4) \
  X(gn_attr_value, u, 8)

#define ATTR_SPEC_LAYOUT(X)        \
  X(gn_attr_spec, struct_size, 0)  \
  X(gn_attr_spec, name, 8)         \
  X(gn_attr_spec, kind, 16)        \
  X(gn_attr_spec, has_default, 20) \
  X(gn_attr_spec, default_value, 24)

#define INFER_CTX_LAYOUT(X)       \
  X(gn_infer_ctx, struct_size, 0) \
  X(gn_infer_ctx, host, 8)        \
  X(gn_infer_ctx, op_name, 16)    \
  X(gn_infer_ctx, user_data, 24)

#define INFER_RESULT_LAYOUT(X)       \
  X(gn_infer_result, struct_size, 0) \
  X(gn_infer_result, n_out, 8)       \
  X(gn_infer_result, out, 16)        \
  X(gn_infer_result, in_dtypes, 24)  \
  X(gn_infer_result, kernel_dtype, 32)

#define OP_SCHEMA_LAYOUT(X)        \
  X(gn_op_schema, struct_size, 0)  \
  X(gn_op_schema, name, 8)         \
  X(gn_op_schema, min_inputs, 16)  \
  X(gn_op_schema, max_inputs, 20)  \
  X(gn_op_schema, max_outputs, 24) \
  X(gn_op_schema, flags, 28)       \
  X(gn_op_schema, attrs, 32)       \
  X(gn_op_schema, n_attrs, 40)     \
  X(gn_op_schema, infer, 48)       \
  X(gn_op_schema, user_data, 56)   \
  X(gn_op_schema, doc, 64)

#define KERNEL_CTX_LAYOUT(X)        \
  X(gn_kernel_ctx, struct_size, 0)  \
  X(gn_kernel_ctx, host, 8)         \
  X(gn_kernel_ctx, device, 16)      \
  X(gn_kernel_ctx, stream, 24)      \
  X(gn_kernel_ctx, kernel_data, 32) \
  X(gn_kernel_ctx, device_ctx, 40)  \
  X(gn_kernel_ctx, seed, 48)        \
  X(gn_kernel_ctx, offset, 56)      \
  X(gn_kernel_ctx, op_name, 64)     \
  X(gn_kernel_ctx, workspace, 72)   \
  X(gn_kernel_ctx, host_private, 80)

#define KERNEL_DESC_LAYOUT(X)        \
  X(gn_kernel_desc, struct_size, 0)  \
  X(gn_kernel_desc, op, 8)           \
  X(gn_kernel_desc, device_type, 16) \
  X(gn_kernel_desc, dtype, 24)       \
  X(gn_kernel_desc, flags, 28)       \
  X(gn_kernel_desc, fn, 32)          \
  X(gn_kernel_desc, user_data, 40)

#define COMM_ID_LAYOUT(X) X(gn_comm_id, bytes, 0)

#define RUNTIME_OPTIONS_LAYOUT(X)        \
  X(gn_runtime_options, struct_size, 0)  \
  X(gn_runtime_options, flags, 8)        \
  X(gn_runtime_options, plugin_path, 16) \
  X(gn_runtime_options, plugins, 24)     \
  X(gn_runtime_options, backends, 32)    \
  X(gn_runtime_options, n_options, 40)   \
  X(gn_runtime_options, option_keys, 48) \
  X(gn_runtime_options, option_values, 56)

#define PLUGIN_RECORD_LAYOUT(X)             \
  X(gn_plugin_record, struct_size, 0)       \
  X(gn_plugin_record, path, 8)              \
  X(gn_plugin_record, name, 16)             \
  X(gn_plugin_record, version, 24)          \
  X(gn_plugin_record, description, 32)      \
  X(gn_plugin_record, abi_major, 40)        \
  X(gn_plugin_record, abi_minor, 44)        \
  X(gn_plugin_record, negotiated_minor, 48) \
  X(gn_plugin_record, loaded, 52)           \
  X(gn_plugin_record, error, 56)

#define DEVICE_TYPE_RECORD_LAYOUT(X)         \
  X(gn_device_type_record, struct_size, 0)   \
  X(gn_device_type_record, name, 8)          \
  X(gn_device_type_record, backend, 16)      \
  X(gn_device_type_record, id, 24)           \
  X(gn_device_type_record, device_count, 28) \
  X(gn_device_type_record, score, 32)        \
  X(gn_device_type_record, flags, 36)        \
  X(gn_device_type_record, note, 40)         \
  X(gn_device_type_record, providers, 48)

#define KERNEL_RECORD_LAYOUT(X)        \
  X(gn_kernel_record, struct_size, 0)  \
  X(gn_kernel_record, backend, 8)      \
  X(gn_kernel_record, device_type, 16) \
  X(gn_kernel_record, dtype, 24)       \
  X(gn_kernel_record, flags, 28)

#define CALL_OPTIONS_LAYOUT(X)       \
  X(gn_call_options, struct_size, 0) \
  X(gn_call_options, generator, 8)

// DLPack exchange structs (dmlc/dlpack v1 layout).
#define DLPACK_LAYOUT(X)                      \
  X(DLTensor, data, 0)                        \
  X(DLTensor, device, 8)                      \
  X(DLTensor, ndim, 16)                       \
  X(DLTensor, dtype, 20)                      \
  X(DLTensor, shape, 24)                      \
  X(DLTensor, strides, 32)                    \
  X(DLTensor, byte_offset, 40)                \
  X(DLManagedTensorVersioned, version, 0)     \
  X(DLManagedTensorVersioned, manager_ctx, 8) \
  X(DLManagedTensorVersioned, deleter, 16)    \
  X(DLManagedTensorVersioned, flags, 24)      \
  X(DLManagedTensorVersioned, dl_tensor, 32)

#define ALL_LAYOUTS(X)         \
  HOST_API_LAYOUT(X)           \
  DEVICE_VTABLE_LAYOUT(X)      \
  COMM_VTABLE_LAYOUT(X)        \
  COMM_STORE_LAYOUT(X)         \
  COMM_CONFIG_LAYOUT(X)        \
  PLUGIN_INFO_LAYOUT(X)        \
  DEVICE_LAYOUT(X)             \
  DEVICE_PROPS_LAYOUT(X)       \
  MEMORY_STATS_LAYOUT(X)       \
  TENSOR_VIEW_LAYOUT(X)        \
  TENSOR_META_LAYOUT(X)        \
  ATTR_VALUE_LAYOUT(X)         \
  ATTR_SPEC_LAYOUT(X)          \
  INFER_CTX_LAYOUT(X)          \
  INFER_RESULT_LAYOUT(X)       \
  OP_SCHEMA_LAYOUT(X)          \
  KERNEL_CTX_LAYOUT(X)         \
  KERNEL_DESC_LAYOUT(X)        \
  COMM_ID_LAYOUT(X)            \
  RUNTIME_OPTIONS_LAYOUT(X)    \
  PLUGIN_RECORD_LAYOUT(X)      \
  DEVICE_TYPE_RECORD_LAYOUT(X) \
  KERNEL_RECORD_LAYOUT(X)      \
  CALL_OPTIONS_LAYOUT(X)       \
  DLPACK_LAYOUT(X)

// X(type, sizeof) for every struct above.
#define ALL_SIZES(X)           \
  X(gn_host_api, 104)          \
  X(gn_device_vtable, 216)     \
  X(gn_comm_vtable, 152)       \
  X(gn_comm_store, 32)         \
  X(gn_comm_config, 64)        \
  X(gn_plugin_info, 72)        \
  X(gn_device, 8)              \
  X(gn_device_props, 168)      \
  X(gn_memory_stats, 88)       \
  X(gn_tensor_view, 48)        \
  X(gn_tensor_meta, 80)        \
  X(gn_attr_value, 24)         \
  X(gn_attr_spec, 48)          \
  X(gn_infer_ctx, 32)          \
  X(gn_infer_result, 40)       \
  X(gn_op_schema, 72)          \
  X(gn_kernel_ctx, 88)         \
  X(gn_kernel_desc, 48)        \
  X(gn_comm_id, 128)           \
  X(gn_runtime_options, 64)    \
  X(gn_plugin_record, 64)      \
  X(gn_device_type_record, 56) \
  X(gn_kernel_record, 32)      \
  X(gn_call_options, 16)       \
  X(DLTensor, 48)              \
  X(DLManagedTensorVersioned, 80)

#if GENESIS_PIN_LAYOUT
#define PIN_OFFSET(T, f, off) static_assert(offsetof(T, f) == (off), #T "." #f " moved: the ABI v1 layout is frozen");
#define PIN_SIZE(T, size)                                                                             \
  static_assert(sizeof(T) == (size), "sizeof(" #T                                                     \
                                     ") changed: append-only fields need a minor bump and a new row " \
                                     "here");
ALL_LAYOUTS(PIN_OFFSET)
ALL_SIZES(PIN_SIZE)
// A minor-0 vtable ends at memset, before the graph slots of minor 1.
static_assert(GN_DEVICE_VTABLE_SIZE_V1_0 == 184, "minor-0 vtable size moved");
static_assert(GN_STRUCT_END(gn_device_vtable, graph_destroy) == sizeof(gn_device_vtable),
              "gn_device_vtable has trailing padding or a field after graph_destroy");
#endif

struct Row {
  const char* type;
  const char* field;
  size_t actual;
  size_t expected;
};

#define ROW(T, f, off) {#T, #f, offsetof(T, f), (off)},
const Row kOffsets[] = {ALL_LAYOUTS(ROW)};
#undef ROW
#define ROW(T, size) {#T, "sizeof", sizeof(T), (size)},
const Row kSizes[] = {ALL_SIZES(ROW)};
#undef ROW

TEST(AbiLayout, EverySlotAtItsV1Offset) {
  if (!GENESIS_PIN_LAYOUT) GTEST_SKIP() << "offsets are pinned for x86-64 only";
  for (const Row& r : kOffsets) {
    EXPECT_EQ(r.actual, r.expected) << r.type << "." << r.field;
  }
}

TEST(AbiLayout, StructSizes) {
  if (!GENESIS_PIN_LAYOUT) GTEST_SKIP() << "sizes are pinned for x86-64 only";
  for (const Row& r : kSizes) {
    EXPECT_EQ(r.actual, r.expected) << r.type;
  }
  EXPECT_EQ(GN_DEVICE_VTABLE_SIZE_V1_0, size_t{184});
}

// Function tables are arrays of pointer-sized slots after their header: the
// n-th slot sits at header + n * sizeof(void*), with no holes.
TEST(AbiLayout, FunctionTablesAreDensePointerArrays) {
  const std::string tables[] = {"gn_host_api", "gn_device_vtable", "gn_comm_vtable"};
  for (const std::string& table : tables) {
    size_t prev = 0;
    bool first_fn = true;
    for (const Row& r : kOffsets) {
      if (table != r.type) continue;
      const std::string f = r.field;
      const bool header = f == "struct_size" || f == "abi_major" || f == "abi_minor" || f == "host_ctx" ||
                          f == "name" || f == "score" || f == "flags" || f == "ctx" || f == "device_type";
      if (header) continue;
      if (!first_fn) {
        EXPECT_EQ(r.actual, prev + sizeof(void*)) << table << "." << f;
      }
      prev = r.actual;
      first_fn = false;
    }
    EXPECT_FALSE(first_fn) << table;
  }
}

// The invariant prefix that never changes, even across majors.
TEST(AbiLayout, InvariantPrefix) {
  EXPECT_EQ(offsetof(gn_host_api, struct_size), 0u);
  EXPECT_EQ(offsetof(gn_host_api, abi_major), sizeof(size_t));
  EXPECT_EQ(offsetof(gn_host_api, abi_minor), sizeof(size_t) + 4);
  EXPECT_EQ(offsetof(gn_plugin_info, struct_size), 0u);
  EXPECT_EQ(offsetof(gn_plugin_info, abi_major), sizeof(size_t));
  EXPECT_EQ(offsetof(gn_plugin_info, abi_minor), sizeof(size_t) + 4);
}

// Enum values and flag bits cross the boundary as integers: pin them.
TEST(AbiLayout, StableEnumValues) {
  EXPECT_EQ(GN_ABI_VERSION_MAJOR, 1);
  EXPECT_GE(GN_ABI_VERSION_MINOR, 1);
  EXPECT_EQ(GN_MAX_DIMS, 8);
  const int dtypes[] = {GN_F32, GN_F16, GN_BF16, GN_F64, GN_I8, GN_U8, GN_I32, GN_I64, GN_BOOL};
  for (int i = 0; i < 9; ++i) EXPECT_EQ(dtypes[i], i);
  EXPECT_EQ(GN_DTYPE_COUNT, 9);
  EXPECT_EQ(GN_DTYPE_ANY, -1);
  const int codes[] = {GN_OK,           GN_ERR_INVALID_ARGUMENT, GN_ERR_SHAPE,       GN_ERR_DTYPE,
                       GN_ERR_DEVICE,   GN_ERR_NOT_FOUND,        GN_ERR_UNSUPPORTED, GN_ERR_OUT_OF_MEMORY,
                       GN_ERR_INDEX,    GN_ERR_VERSION,          GN_ERR_IO,          GN_ERR_ALREADY_EXISTS,
                       GN_ERR_INTERNAL, GN_ERR_TIMEOUT,          GN_ERR_ABORTED};
  for (int i = 0; i < 15; ++i) EXPECT_EQ(codes[i], i);
  EXPECT_EQ(GN_ATTR_INT, 0);
  EXPECT_EQ(GN_ATTR_FLOAT, 1);
  EXPECT_EQ(GN_ATTR_INTS, 2);
  EXPECT_EQ(GN_ATTR_STRING, 3);
  EXPECT_EQ(GN_ATTR_DEVICE, 4);
  EXPECT_EQ(GN_COPY_HOST_TO_DEVICE, 0);
  EXPECT_EQ(GN_COPY_DEVICE_TO_HOST, 1);
  EXPECT_EQ(GN_COPY_DEVICE_TO_DEVICE, 2);
  EXPECT_EQ(GN_REDUCE_SUM, 0);
  EXPECT_EQ(GN_REDUCE_AVG, 4);
  EXPECT_EQ(GN_LOG_DEBUG, 0);
  EXPECT_EQ(GN_LOG_ERROR, 3);
  EXPECT_EQ(GN_DEVICE_HOST_MEMORY, 0x1u);
  EXPECT_EQ(GN_META_WRAPPED_SCALAR, 0x1u);
  EXPECT_EQ(GN_OP_INPLACE, 0x1u);
  EXPECT_EQ(GN_OP_RANDOM, 0x2u);
  EXPECT_EQ(GN_OP_VIEW, 0x4u);
  EXPECT_EQ(GN_OP_NEEDS_DEVICE, 0x8u);
  EXPECT_EQ(GN_KERNEL_CONTIGUOUS, 0x1u);
  EXPECT_EQ(GN_RUNTIME_NO_DEFAULT_PATHS, 0x1u);
  EXPECT_EQ(GN_RUNTIME_QUIET, 0x2u);
  EXPECT_EQ(GN_RUNTIME_NO_PLUGINS, 0x4u);
  EXPECT_EQ(GN_DIM_NONE, INT64_MIN);
  EXPECT_STREQ(GN_PLUGIN_INIT_SYMBOL, "gn_plugin_init");
}

}  // namespace

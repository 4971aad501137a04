/* genesis/dtype.h - element types. Values are stable within a major version. */
#ifndef GENESIS_DTYPE_H
#define GENESIS_DTYPE_H

#include "genesis/version.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gn_dtype {
  GN_F32 = 0,
  GN_F16 = 1,
  GN_BF16 = 2,
  GN_F64 = 3,
  GN_I8 = 4,
  GN_U8 = 5,
  GN_I32 = 6,
  GN_I64 = 7,
  GN_BOOL = 8,
  GN_DTYPE_COUNT = 9,
  GN_DTYPE_ANY = -1 /* kernel registration: serves every dtype (checks itself) */
} gn_dtype;

/* Size of one element in bytes (0 for an invalid dtype). */
static inline size_t gn_dtype_size(int32_t dtype) {
  switch (dtype) {
    case GN_F32:
    case GN_I32: return 4;
    case GN_F16:
    case GN_BF16: return 2;
    case GN_F64:
    case GN_I64: return 8;
    case GN_I8:
    case GN_U8:
    case GN_BOOL: return 1;
    default: return 0;
  }
}

/* PyTorch-style name ("float32", "bfloat16", ...); "invalid" otherwise. */
static inline const char* gn_dtype_name(int32_t dtype) {
  switch (dtype) {
    case GN_F32: return "float32";
    case GN_F16: return "float16";
    case GN_BF16: return "bfloat16";
    case GN_F64: return "float64";
    case GN_I8: return "int8";
    case GN_U8: return "uint8";
    case GN_I32: return "int32";
    case GN_I64: return "int64";
    case GN_BOOL: return "bool";
    default: return "invalid";
  }
}

/* 1 for f32/f16/bf16/f64. */
static inline int gn_dtype_is_float(int32_t dtype) {
  return dtype == GN_F32 || dtype == GN_F16 || dtype == GN_BF16 || dtype == GN_F64;
}

/* 1 for i8/u8/i32/i64 (bool excluded). */
static inline int gn_dtype_is_int(int32_t dtype) {
  return dtype == GN_I8 || dtype == GN_U8 || dtype == GN_I32 || dtype == GN_I64;
}

#ifdef __cplusplus
}
#endif

#endif /* GENESIS_DTYPE_H */

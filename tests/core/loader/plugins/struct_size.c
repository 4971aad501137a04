/* struct_size.c - registers an op schema and a kernel whose struct_size is set
 * by the build (SCHEMA_SIZE, KERNEL_SIZE; default: the header's sizeof).  Each
 * struct sits inside a larger block whose tail holds poison bytes: a host that
 * reads beyond struct_size sees garbage flags, attrs and user data. */
#include "hostdev.h"

#include <stddef.h>

HOSTDEV_UNARY_F32(sized_neg, -x)

#ifndef SCHEMA_SIZE
#define SCHEMA_SIZE sizeof(gn_op_schema)
#endif
#ifndef KERNEL_SIZE
#define KERNEL_SIZE sizeof(gn_kernel_desc)
#endif

/* What a newer header might declare: the current struct plus appended fields. */
typedef struct long_schema {
  gn_op_schema s;
  unsigned char future[32];
} long_schema;
typedef struct long_kernel {
  gn_kernel_desc k;
  unsigned char future[32];
} long_kernel;

GN_PLUGIN_EXPORT gn_status* gn_plugin_init(const gn_host_api* host, gn_plugin_info* info) {
  long_schema schema;
  long_kernel kernel;
  gn_status* st;
  if ((st = hostdev_init(host, info, "loadertest_struct_size", "1.0.0", "sizedev", 10)) != NULL) return st;

  memset(&schema, 0xA5, sizeof schema);
  schema.s.struct_size = SCHEMA_SIZE;
  schema.s.name = "sized_neg";
  schema.s.min_inputs = 1;
  schema.s.max_inputs = 1;
  schema.s.max_outputs = 1;
  schema.s.flags = 0;
  schema.s.attrs = NULL;
  schema.s.n_attrs = 0;
  schema.s.infer = hostdev_same_as_input;
  schema.s.user_data = NULL;
  schema.s.doc = "negation, registered with a chosen struct_size";
  if ((st = host->register_op(host->host_ctx, &schema.s)) != NULL) return st;

  memset(&kernel, 0xA5, sizeof kernel);
  kernel.k.struct_size = KERNEL_SIZE;
  kernel.k.op = "sized_neg";
  kernel.k.device_type = "sizedev";
  kernel.k.dtype = GN_F32;
  kernel.k.flags = GN_KERNEL_CONTIGUOUS;
  kernel.k.fn = sized_neg;
  kernel.k.user_data = NULL;
  return host->register_kernel(host->host_ctx, &kernel.k);
}

/* c99_headers_test.c - genesis/genesis.h used from strict C99 (-std=c99
 * -pedantic -Werror): the inline helpers work, the structs can be filled the
 * way a C plugin or caller fills them, and the public prototypes are visible.
 * Links nothing but libc: it checks the headers, not libgenesis. */
#include <stdio.h>
#include <string.h>

#include "genesis/genesis.h"

static int g_failures;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
      ++g_failures;                                                            \
    }                                                                          \
  } while (0)

/* A kernel and an infer callback with exactly the ABI signatures. */
static gn_status* noop_kernel(const gn_kernel_ctx* ctx, const gn_tensor_view* in, size_t n_in,
                              const gn_tensor_view* out, size_t n_out, const gn_attr_value* attrs, size_t n_attrs) {
  (void)ctx;
  (void)in;
  (void)n_in;
  (void)out;
  (void)n_out;
  (void)attrs;
  (void)n_attrs;
  return NULL;
}

static gn_status* noop_infer(const gn_infer_ctx* ctx, const gn_tensor_meta* in, size_t n_in, const gn_attr_value* attrs,
                             size_t n_attrs, gn_infer_result* result) {
  (void)ctx;
  (void)in;
  (void)n_in;
  (void)attrs;
  (void)n_attrs;
  (void)result;
  return NULL;
}

/* gn_view_broadcast_strides against an independent oracle: for every index of
 * the broadcast shape, the element it addresses must be the one reached by
 * clamping each aligned index to the input's size-1 dims. */
static void check_broadcast_strides(void) {
  const int64_t out_shape[3] = {2, 3, 4};
  const int64_t in_shape[2] = {3, 1};
  const int64_t in_strides[2] = {5, 7};
  const int64_t bad_shape[1] = {2};
  const int64_t too_long[4] = {1, 2, 3, 4};
  int64_t bs[4];
  int64_t i, j, l;
  gn_tensor_view in;
  memset(&in, 0, sizeof in);
  in.ndim = 2;
  in.shape = in_shape;
  in.strides = in_strides;
  CHECK(gn_view_broadcast_strides(&in, 3, out_shape, bs) == 1);
  for (i = 0; i < out_shape[0]; ++i)
    for (j = 0; j < out_shape[1]; ++j)
      for (l = 0; l < out_shape[2]; ++l) {
        const int64_t ij = in_shape[0] == 1 ? 0 : j, il = in_shape[1] == 1 ? 0 : l;
        CHECK(i * bs[0] + j * bs[1] + l * bs[2] == ij * in_strides[0] + il * in_strides[1]);
      }
  in.ndim = 1;
  in.shape = bad_shape; /* (2) does not broadcast to (2, 3, 4) */
  CHECK(gn_view_broadcast_strides(&in, 3, out_shape, bs) == 0);
  in.ndim = 4;
  in.shape = too_long;
  CHECK(gn_view_broadcast_strides(&in, 3, out_shape, bs) == 0);
}

int main(void) {
  int64_t shape[2] = {2, 3};
  int64_t strides[2] = {3, 1};
  int64_t t_strides[2] = {1, 2};
  float data[6] = {0};
  gn_tensor_view v;
  gn_attr_value a;
  gn_kernel_desc k;
  gn_op_schema s;
  gn_attr_spec spec = {sizeof(gn_attr_spec), "alpha", GN_ATTR_FLOAT, 1, {GN_ATTR_FLOAT, 0, {0}}};
  gn_runtime_options opts;
  gn_plugin_init_fn init = NULL;
  gn_device_vtable vt;

  CHECK(gn_dtype_size(GN_F32) == 4 && gn_dtype_size(GN_BF16) == 2 && gn_dtype_size(GN_BOOL) == 1);
  CHECK(gn_dtype_size(42) == 0);
  CHECK(strcmp(gn_dtype_name(GN_BF16), "bfloat16") == 0);
  CHECK(gn_dtype_is_float(GN_F16) && !gn_dtype_is_float(GN_I32));
  CHECK(gn_dtype_is_int(GN_U8) && !gn_dtype_is_int(GN_BOOL));

  memset(&v, 0, sizeof v);
  v.data = data;
  v.ndim = 2;
  v.dtype = GN_F32;
  v.shape = shape;
  v.strides = strides;
  v.byte_offset = 4;
  CHECK(gn_view_numel(&v) == 6);
  CHECK(gn_view_is_contiguous(&v));
  CHECK((char*)gn_view_ptr(&v) == (char*)data + 4);
  v.strides = t_strides;
  CHECK(!gn_view_is_contiguous(&v));

  a = gn_attr_float(2.5);
  CHECK(a.kind == GN_ATTR_FLOAT && a.u.f == 2.5);
  a = gn_attr_ints(shape, 2);
  CHECK(a.kind == GN_ATTR_INTS && a.u.ints.size == 2 && a.u.ints.data == shape);
  a = gn_attr_int(GN_DIM_NONE);
  CHECK(a.u.i == INT64_MIN);
  spec.default_value.u.f = 1.0;
  CHECK(spec.has_default == 1);

  memset(&k, 0, sizeof k);
  k.struct_size = sizeof k;
  k.op = "add";
  k.device_type = "cpu";
  k.dtype = GN_DTYPE_ANY;
  k.flags = GN_KERNEL_CONTIGUOUS;
  k.fn = noop_kernel;
  CHECK(k.fn(NULL, NULL, 0, NULL, 0, NULL, 0) == NULL);

  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  s.attrs = &spec;
  s.n_attrs = 1;
  s.infer = noop_infer;
  CHECK(s.infer(NULL, NULL, 0, NULL, 0, NULL) == NULL);

  memset(&vt, 0, sizeof vt);
  vt.struct_size = GN_DEVICE_VTABLE_SIZE_V1_0;
  CHECK(GN_DEVICE_VTABLE_SIZE_V1_0 < sizeof(gn_device_vtable));
  CHECK(GN_STRUCT_END(gn_device_vtable, memset) == GN_DEVICE_VTABLE_SIZE_V1_0);

  memset(&opts, 0, sizeof opts);
  opts.struct_size = sizeof opts;
  opts.flags = GN_RUNTIME_NO_DEFAULT_PATHS | GN_RUNTIME_QUIET | GN_RUNTIME_NO_PLUGINS;
  CHECK(init == NULL);

  /* The public API is declared with the expected types (sizeof does not
   * evaluate, so nothing needs linking). */
  CHECK(sizeof(&gn_runtime_create) == sizeof(void (*)(void)));
  CHECK(sizeof(gn_op_call(NULL, NULL, NULL, 0, NULL, 0, NULL, 0)) == sizeof(gn_status*));
  CHECK(sizeof(gn_status_message(NULL)) == sizeof(const char*));

  check_broadcast_strides();

  if (g_failures) {
    fprintf(stderr, "c99_headers_test: %d check(s) failed\n", g_failures);
    return 1;
  }
  printf("c99_headers_test: genesis/genesis.h is clean C99\n");
  return 0;
}

/* tensor_basics.c - Genesis from plain C99: create a runtime, list its
 * plugins, make tensors from host arrays, call ops (broadcasting add, matmul,
 * sum over a dim, softmax), read results back, take zero-copy views and handle
 * an error.  Includes only <genesis/genesis.h> and links only libgenesis.
 *
 *   cc -std=c99 tensor_basics.c -I<prefix>/include -L<prefix>/lib -lgenesis
 *
 * Exits 0 when every computed value matches the one worked out by hand. */
#include <stdio.h>
#include <stdlib.h>

#include "genesis/genesis.h"

static int g_mismatches;

static float absf(float v) { return v < 0 ? -v : v; }

/* Stop on an unexpected error: print the op's message, free the status. */
static void check(gn_status* st, const char* what) {
  if (!st) return;
  fprintf(stderr, "tensor_basics: %s failed: %s: %s\n", what, gn_status_code_name(gn_status_code(st)),
          gn_status_message(st));
  gn_status_free(st);
  exit(1);
}

/* Call op `name` with n_in inputs and the given attributes; one new output. */
static gn_tensor* call(gn_runtime* rt, const char* name, gn_tensor** in, size_t n_in, const gn_attr_value* attrs,
                       size_t n_attrs) {
  const gn_op* op;
  gn_tensor* out[1] = {NULL};
  /* A real program looks ops up once and keeps the handle. */
  check(gn_op_find(rt, name, &op), name);
  check(gn_op_call(rt, op, in, n_in, attrs, n_attrs, out, 1), name);
  return out[0];
}

/* Copy a float32 tensor of at most 64 elements to the host. */
static int64_t read_f32(const gn_tensor* t, float* buf) {
  int64_t n = gn_tensor_numel(t);
  if (n > 64) n = 64;
  check(gn_tensor_to_host(t, buf, (size_t)n * sizeof(float)), "to_host");
  return n;
}

/* Print a 1-D or 2-D float32 tensor as nested lists and compare it with the
 * expected values (row-major). */
static void show(const char* label, const gn_tensor* t, const float* expect) {
  float v[64];
  const int64_t n = read_f32(t, v);
  const int32_t ndim = gn_tensor_ndim(t);
  const int64_t cols = ndim == 2 ? gn_tensor_shape(t)[1] : n;
  int64_t i;
  printf("%s = %s", label, ndim == 2 ? "[[" : "[");
  for (i = 0; i < n; ++i) {
    if (i > 0) printf(i % cols == 0 ? "], [" : ", ");
    printf("%.4g", v[i]);
    if (absf(v[i] - expect[i]) > 1e-4f * (1.0f + absf(expect[i]))) {
      fprintf(stderr, "tensor_basics: %s[%lld] = %g, expected %g\n", label, (long long)i, v[i], expect[i]);
      ++g_mismatches;
    }
  }
  printf("%s\n", ndim == 2 ? "]]" : "]");
}

/* Which plugins were found, and why any was skipped. */
static void list_plugins(const gn_runtime* rt) {
  size_t i, n = gn_runtime_plugin_count(rt);
  printf("plugins (%zu):\n", n);
  for (i = 0; i < n; ++i) {
    gn_plugin_record r;
    r.struct_size = sizeof r;
    check(gn_runtime_plugin_get(rt, i, &r), "plugin_get");
    if (r.loaded)
      printf("  %-12s %-8s loaded (ABI %u.%u)\n", r.name, r.version, r.abi_major, r.negotiated_minor);
    else
      printf("  %s REJECTED: %s\n", r.path, r.error);
  }
}

int main(void) {
  uint32_t major, minor;
  gn_runtime* rt;
  gn_device cpu;
  gn_tensor *a, *b, *w, *x, *c, *m, *s, *p, *at, *sl, *bad;
  gn_tensor* in[2];
  gn_tensor* out[1] = {NULL};
  const gn_op* add;
  gn_status* st;

  /* Host data, row-major.  a is 2x3, b is 3 (broadcast over a's rows), w is 3x2. */
  const float a_data[6] = {1, 2, 3, 4, 5, 6};
  const float b_data[3] = {10, 20, 30};
  const float w_data[6] = {1, 2, 3, 4, 5, 6};
  const float x_data[3] = {1, 2, 3};
  const int64_t a_shape[2] = {2, 3}, b_shape[1] = {3}, w_shape[2] = {3, 2}, x_shape[1] = {3};
  const int64_t bad_shape[1] = {4};
  const float bad_data[4] = {0, 0, 0, 0};

  /* Expected results, worked out by hand. */
  const float add_expect[6] = {11, 22, 33, 14, 25, 36};
  const float matmul_expect[4] = {22, 28, 49, 64};
  const float sum_expect[2] = {6, 15};
  const float softmax_expect[3] = {0.09003057f, 0.24472847f, 0.66524096f};
  const float transpose_expect[6] = {1, 4, 2, 5, 3, 6};
  const float slice_expect[4] = {2, 3, 5, 6};

  gn_abi_version(&major, &minor);
  printf("Genesis %s, ABI %u.%u (headers %d.%d)\n", gn_version_string(), major, minor, GN_ABI_VERSION_MAJOR,
         GN_ABI_VERSION_MINOR);

  /* NULL options: plugins from $GENESIS_PLUGIN_PATH and the directory next to
   * libgenesis.  A broken plugin is skipped (and listed), never fatal. */
  check(gn_runtime_create(NULL, &rt), "gn_runtime_create");
  list_plugins(rt);
  check(gn_device_parse(rt, "cpu", &cpu), "device cpu");

  check(gn_tensor_from_host(rt, a_data, a_shape, 2, GN_F32, cpu, &a), "tensor a");
  check(gn_tensor_from_host(rt, b_data, b_shape, 1, GN_F32, cpu, &b), "tensor b");
  check(gn_tensor_from_host(rt, w_data, w_shape, 2, GN_F32, cpu, &w), "tensor w");
  check(gn_tensor_from_host(rt, x_data, x_shape, 1, GN_F32, cpu, &x), "tensor x");
  show("a", a, a_data);

  /* add(a, b): b's shape (3) broadcasts against a's (2, 3). */
  in[0] = a;
  in[1] = b;
  c = call(rt, "add", in, 2, NULL, 0);
  show("add(a, b)", c, add_expect);

  /* matmul(a, w): (2, 3) @ (3, 2) -> (2, 2).  Attributes default (no transposes). */
  in[0] = a;
  in[1] = w;
  m = call(rt, "matmul", in, 2, NULL, 0);
  show("matmul(a, w)", m, matmul_expect);

  /* sum over dim 1.  Attributes are positional (dims, keepdim, dtype); the
   * ones left out take their defaults. */
  {
    const int64_t dims[1] = {1};
    gn_attr_value attrs[1];
    attrs[0] = gn_attr_ints(dims, 1);
    s = call(rt, "sum", &a, 1, attrs, 1);
    show("sum(a, dims=[1])", s, sum_expect);
  }

  /* softmax along the last dim (the default dim = -1). */
  p = call(rt, "softmax", &x, 1, NULL, 0);
  show("softmax([1, 2, 3])", p, softmax_expect);

  /* Views share a's storage; nothing is copied until read back. */
  check(gn_tensor_transpose(a, 0, 1, &at), "transpose");
  printf("transpose(a): shape (%lld, %lld), contiguous %d, shares a's storage %d\n", (long long)gn_tensor_shape(at)[0],
         (long long)gn_tensor_shape(at)[1], gn_tensor_is_contiguous(at), gn_tensor_shares_storage(at, a));
  show("transpose(a)", at, transpose_expect);
  check(gn_tensor_slice(a, 1, 1, 3, 1, &sl), "slice");
  show("a[:, 1:3]", sl, slice_expect);
  if (gn_tensor_is_contiguous(at) || !gn_tensor_shares_storage(sl, a)) ++g_mismatches;

  /* Errors come back as a status: here (2, 3) + (4) cannot broadcast.  The
   * output slot is left untouched on error. */
  check(gn_tensor_from_host(rt, bad_data, bad_shape, 1, GN_F32, cpu, &bad), "tensor bad");
  check(gn_op_find(rt, "add", &add), "find add");
  in[0] = a;
  in[1] = bad;
  st = gn_op_call(rt, add, in, 2, NULL, 0, out, 1);
  if (st) {
    printf("expected error: %s: %s\n", gn_status_code_name(gn_status_code(st)), gn_status_message(st));
    if (gn_status_code(st) != GN_ERR_SHAPE || out[0] != NULL) ++g_mismatches;
    gn_status_free(st);
  } else {
    fprintf(stderr, "tensor_basics: add of mismatched shapes succeeded\n");
    gn_tensor_release(out[0]);
    ++g_mismatches;
  }

  /* Release every handle; the runtime goes last. */
  gn_tensor_release(bad);
  gn_tensor_release(sl);
  gn_tensor_release(at);
  gn_tensor_release(p);
  gn_tensor_release(s);
  gn_tensor_release(m);
  gn_tensor_release(c);
  gn_tensor_release(x);
  gn_tensor_release(w);
  gn_tensor_release(b);
  gn_tensor_release(a);
  gn_runtime_destroy(rt);

  if (g_mismatches) {
    printf("tensor_basics: %d result(s) differ\n", g_mismatches);
    return 1;
  }
  printf("tensor_basics: all results match\n");
  return 0;
}

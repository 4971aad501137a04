/* consumer.c - a C99 program built against an installed Genesis with
 * `cc consumer.c $(pkg-config --cflags --libs genesis)`.
 *
 *   consumer <prefix>
 *
 * Every plugin the runtime loaded must come from <prefix>, a canonical path (no search path is
 * given, so they were found next to the installed libgenesis); the reference
 * plugin and the third-party plugin "thirdparty_scale" must be among them.
 * Then it runs a built-in op (add) and the third-party op.  Exits 0 on success. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "genesis/genesis.h"

static int check(gn_status* st, const char* what) {
  if (!st) return 0;
  fprintf(stderr, "consumer: %s: %s\n", what, gn_status_message(st));
  gn_status_free(st);
  return 1;
}

/* out = op(in[0..n_in)) with the given attributes; 0 on success. */
static int call(gn_runtime* rt, const char* name, gn_tensor** in, size_t n_in, const gn_attr_value* attrs,
                size_t n_attrs, gn_tensor** out) {
  const gn_op* op;
  if (check(gn_op_find(rt, name, &op), name)) return 1;
  *out = NULL;
  return check(gn_op_call(rt, op, in, n_in, attrs, n_attrs, out, 1), name);
}

static int expect(const char* what, const gn_tensor* t, const float* want, int n) {
  float got[4];
  int i;
  if (check(gn_tensor_to_host(t, got, sizeof(float) * (size_t)n), what)) return 1;
  for (i = 0; i < n; ++i) {
    if (got[i] != want[i]) {
      fprintf(stderr, "consumer: %s[%d] = %g, expected %g\n", what, i, got[i], want[i]);
      return 1;
    }
  }
  printf("consumer: %s ok\n", what);
  return 0;
}

int main(int argc, char** argv) {
  const char* prefix;
  char real[PATH_MAX];
  size_t i, n, prefix_len;
  int failed = 0, have_reference = 0, have_thirdparty = 0;
  gn_runtime* rt;
  gn_device cpu;
  gn_tensor *x = NULL, *y = NULL, *sum = NULL, *scaled = NULL;
  gn_tensor* in[2];
  gn_attr_value factor;
  const float x_data[3] = {1, 2, 3}, y_data[3] = {10, 20, 30};
  const float want_sum[3] = {11, 22, 33}, want_scaled[3] = {2.5f, 5, 7.5f};
  const int64_t shape[1] = {3};

  if (argc != 2) {
    fprintf(stderr, "usage: consumer <prefix>\n");
    return 2;
  }
  prefix = argv[1];
  prefix_len = strlen(prefix);
  if (check(gn_runtime_create(NULL, &rt), "gn_runtime_create")) return 1;

  n = gn_runtime_plugin_count(rt);
  for (i = 0; i < n; ++i) {
    gn_plugin_record rec;
    memset(&rec, 0, sizeof rec);
    rec.struct_size = sizeof rec;
    if (check(gn_runtime_plugin_get(rt, i, &rec), "gn_runtime_plugin_get")) return 1;
    printf("consumer: plugin %s %s %s\n", rec.name, rec.loaded ? "loaded" : "rejected", rec.path);
    if (!realpath(rec.path, real) || strncmp(real, prefix, prefix_len) != 0 || real[prefix_len] != '/') {
      fprintf(stderr, "consumer: plugin %s is not under %s\n", rec.path, prefix);
      failed = 1;
    }
    if (!rec.loaded) {
      fprintf(stderr, "consumer: plugin %s rejected: %s\n", rec.path, rec.error);
      failed = 1;
    }
    if (strcmp(rec.name, "reference") == 0) have_reference = 1;
    if (strcmp(rec.name, "thirdparty_scale") == 0) have_thirdparty = 1;
  }
  if (!have_reference || !have_thirdparty) {
    fprintf(stderr, "consumer: missing plugin (reference %d, thirdparty_scale %d)\n", have_reference, have_thirdparty);
    failed = 1;
  }

  if (check(gn_device_parse(rt, "cpu:0", &cpu), "gn_device_parse") ||
      check(gn_tensor_from_host(rt, x_data, shape, 1, GN_F32, cpu, &x), "x") ||
      check(gn_tensor_from_host(rt, y_data, shape, 1, GN_F32, cpu, &y), "y"))
    return 1;
  in[0] = x;
  in[1] = y;
  failed |= call(rt, "add", in, 2, NULL, 0, &sum) || expect("add", sum, want_sum, 3);
  factor.kind = GN_ATTR_FLOAT;
  factor.reserved = 0;
  factor.u.f = 2.5;
  failed |=
      call(rt, "thirdparty_scale", in, 1, &factor, 1, &scaled) || expect("thirdparty_scale", scaled, want_scaled, 3);

  gn_tensor_release(scaled);
  gn_tensor_release(sum);
  gn_tensor_release(y);
  gn_tensor_release(x);
  gn_runtime_destroy(rt);
  printf("consumer: %s\n", failed ? "FAILED" : "OK");
  return failed;
}

// core/src/status.cpp - statuses.
#include "status.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

#include "runtime.h"

namespace genesis::core {

gn_status* make_status(int32_t code, std::string msg) {
  return new gn_status{code == GN_OK ? GN_ERR_INTERNAL : code, std::move(msg)};
}

void fail(int32_t code, std::string msg) { throw Error(code, std::move(msg)); }

void require_non_null(const char* fn, std::initializer_list<std::pair<const char*, const void*>> args) {
  for (const auto& a : args) {
    if (!a.second) fail(GN_ERR_INVALID_ARGUMENT, std::string(fn) + ": " + a.first + " is NULL");
    // Every entry point names its runtime argument "rt": the place to catch a
    // runtime used after gn_runtime_destroy.
    if (checked_mode() && a.first[0] == 'r' && a.first[1] == 't' && !a.first[2])
      check_runtime_arg(static_cast<const gn_runtime*>(a.second), fn);
  }
}

bool checked_mode() {
  static const bool on = [] {
    const char* v = std::getenv("GENESIS_CHECKED");
    return v && *v && std::strcmp(v, "0") != 0;
  }();
  return on;
}

void keep_retired(void* p) {
  static auto* mu = new std::mutex;            // never destroyed: retiring may happen
  static auto* kept = new std::vector<void*>;  // during static destruction
  std::lock_guard<std::mutex> lock(*mu);
  kept->push_back(p);
}

void checked_abort(const char* fn, const char* kind, const void* p, const char* what) {
  std::fprintf(stderr, "genesis: GENESIS_CHECKED: %s: %s %p %s\n", fn, kind, p, what);
  std::fflush(stderr);
  std::abort();
}

void check_runtime_arg(const gn_runtime* rt, const char* fn) {
  if (!rt || !checked_mode()) return;
  check_live(rt, kRuntimeMagic, fn, "runtime");
  if (rt->destroyed) checked_abort(fn, "runtime", rt, "is used after gn_runtime_destroy");
}

void throw_if(gn_status* st) {
  if (!st) return;
  Error e(st->code, std::move(st->msg));
  delete st;
  throw e;
}

}  // namespace genesis::core

using namespace genesis::core;

extern "C" {

int32_t gn_status_code(const gn_status* st) { return st ? st->code : GN_OK; }
const char* gn_status_message(const gn_status* st) { return st ? st->msg.c_str() : ""; }
void gn_status_free(gn_status* st) { delete st; }
gn_status* gn_status_create(int32_t code, const char* msg) {
  if (code == GN_OK) return nullptr;
  try {
    return make_status(code, msg ? msg : "");
  } catch (...) {
    return nullptr;  // out of memory: nothing better to return through a C boundary
  }
}

const char* gn_status_code_name(int32_t code) {
  switch (code) {
    case GN_OK: return "GN_OK";
    case GN_ERR_INVALID_ARGUMENT: return "GN_ERR_INVALID_ARGUMENT";
    case GN_ERR_SHAPE: return "GN_ERR_SHAPE";
    case GN_ERR_DTYPE: return "GN_ERR_DTYPE";
    case GN_ERR_DEVICE: return "GN_ERR_DEVICE";
    case GN_ERR_NOT_FOUND: return "GN_ERR_NOT_FOUND";
    case GN_ERR_UNSUPPORTED: return "GN_ERR_UNSUPPORTED";
    case GN_ERR_OUT_OF_MEMORY: return "GN_ERR_OUT_OF_MEMORY";
    case GN_ERR_INDEX: return "GN_ERR_INDEX";
    case GN_ERR_VERSION: return "GN_ERR_VERSION";
    case GN_ERR_IO: return "GN_ERR_IO";
    case GN_ERR_ALREADY_EXISTS: return "GN_ERR_ALREADY_EXISTS";
    case GN_ERR_INTERNAL: return "GN_ERR_INTERNAL";
    case GN_ERR_TIMEOUT: return "GN_ERR_TIMEOUT";
    case GN_ERR_ABORTED: return "GN_ERR_ABORTED";
    default: return "GN_ERR_UNKNOWN";
  }
}

}  // extern "C"

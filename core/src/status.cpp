// core/src/status.cpp - statuses.
#include "status.h"

#include <new>

#include "genesis/runtime.h"

namespace genesis::core {

gn_status* make_status(int32_t code, std::string msg) {
  return new gn_status{code == GN_OK ? GN_ERR_INTERNAL : code, std::move(msg)};
}

void fail(int32_t code, std::string msg) { throw Error(code, std::move(msg)); }

void require_non_null(const char* fn, std::initializer_list<std::pair<const char*, const void*>> args) {
  for (const auto& a : args)
    if (!a.second) fail(GN_ERR_INVALID_ARGUMENT, std::string(fn) + ": " + a.first + " is NULL");
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
    default: return "GN_ERR_UNKNOWN";
  }
}

}  // extern "C"

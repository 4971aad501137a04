// genesis/sdk/error.h - exceptions inside a plugin, statuses at its edge.
//
// Kernels throw gn::sdk::Error (via GN_CHECK / gn::sdk::fail); every entry
// point a plugin hands the host is wrapped in gn::sdk::guard, which turns any
// exception into a gn_status* made by the host.  Nothing escapes the boundary.
#pragma once

#include <exception>
#include <new>
#include <string>

#include "genesis/plugin.h"

namespace gn::sdk {

// An error with a stable gn_code.
struct Error : std::exception {
  int32_t code;
  std::string msg;
  Error(int32_t c, std::string m) : code(c), msg(std::move(m)) {}
  const char* what() const noexcept override { return msg.c_str(); }
};

// Throw an Error.
[[noreturn]] inline void fail(int32_t code, std::string msg) { throw Error(code, std::move(msg)); }

// The host table of this plugin (set by GN_SDK_PLUGIN / set_host at init).
inline const gn_host_api*& host_ref() {
  static const gn_host_api* h = nullptr;
  return h;
}
inline void set_host(const gn_host_api* h) { host_ref() = h; }

// Run f; convert any exception into a host status (NULL when f returns normally).
template <class F>
gn_status* guard(const gn_host_api* host, F&& f) noexcept {
  try {
    f();
    return nullptr;
  } catch (const Error& e) {
    return host->status_new(e.code, e.msg.c_str());
  } catch (const std::bad_alloc&) {
    return host->status_new(GN_ERR_OUT_OF_MEMORY, "out of host memory");
  } catch (const std::exception& e) {
    return host->status_new(GN_ERR_INTERNAL, e.what());
  } catch (...) {
    return host->status_new(GN_ERR_INTERNAL, "unknown exception in plugin");
  }
}

// Turn a host status into an exception (for statuses a plugin receives).
inline void throw_if(const gn_host_api* host, gn_status* st) {
  if (!st) return;
  Error e(host->status_code(st), host->status_message(st));
  host->status_free(st);
  throw e;
}

}  // namespace gn::sdk

// Check a condition inside a kernel; the message is prefixed with the op name
// by the caller's convention "[op] ...".
#define GN_CHECK(cond, code, msg)                \
  do {                                           \
    if (!(cond)) ::gn::sdk::fail((code), (msg)); \
  } while (0)

// The standard answer of a backend that lacks a case: the dispatcher then tries
// the next kernel (e.g. the reference backend).
#define GN_UNSUPPORTED(what) \
  ::gn::sdk::fail(GN_ERR_UNSUPPORTED, std::string(what) + " is not supported by this backend")

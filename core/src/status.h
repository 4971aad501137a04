// core/src/status.h - the concrete gn_status and the core's error exception.
#pragma once

#include <cstdint>
#include <exception>
#include <initializer_list>
#include <string>
#include <utility>

#include "genesis/status.h"

// The opaque status object of the ABI.
struct gn_status {
  int32_t code;
  std::string msg;
};

namespace genesis::core {

// Thrown inside the core, turned into a gn_status at the C boundary.
struct Error : std::exception {
  int32_t code;
  std::string msg;
  Error(int32_t c, std::string m) : code(c), msg(std::move(m)) {}
  const char* what() const noexcept override { return msg.c_str(); }
};

// New status (never NULL).
gn_status* make_status(int32_t code, std::string msg);
// Throw an Error.
[[noreturn]] void fail(int32_t code, std::string msg);
// Fail with GN_ERR_INVALID_ARGUMENT "fn: <name> is NULL" for the first
// {name, pointer} pair whose pointer is NULL: the entry points' guard against
// arguments they cannot use.
void require_non_null(const char* fn, std::initializer_list<std::pair<const char*, const void*>> args);
// Throw the status as an Error (freeing it); no-op for NULL.
void throw_if(gn_status* st);
// Run f, converting every exception into a status (the body of each extern "C" entry).
template <class F>
gn_status* guarded(F&& f) noexcept {
  try {
    f();
    return nullptr;
  } catch (const Error& e) {
    return make_status(e.code, e.msg);
  } catch (const std::bad_alloc&) {
    return make_status(GN_ERR_OUT_OF_MEMORY, "out of host memory");
  } catch (const std::exception& e) {
    return make_status(GN_ERR_INTERNAL, std::string("internal error: ") + e.what());
  } catch (...) {
    return make_status(GN_ERR_INTERNAL, "internal error: unknown exception");
  }
}

}  // namespace genesis::core

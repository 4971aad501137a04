// core/src/checked.h - the checked mode (GENESIS_CHECKED=1): lifetime misuse of
// a handle (a second gn_tensor_release, a stream or runtime destroyed twice, a
// handle used after its end) is reported by name and aborts, instead of being
// a use-after-free.  Each handle struct starts with a magic word naming its
// kind; in checked mode a handle's memory is never given back, only destroyed
// and marked dead, so a later use finds the mark.
#pragma once

#include <cstdint>
#include <cstring>

namespace genesis::core {

// True when GENESIS_CHECKED is set to anything but "" or "0"; read at the
// first use, so a program may set it before its first Genesis call.
bool checked_mode();

// The first word of every handle struct.
enum HandleMagic : uint32_t {
  kTensorMagic = 0x54534e47u,   // "GNST"
  kRuntimeMagic = 0x52534e47u,  // "GNSR"
  kStreamMagic = 0x53534e47u,   // "GNSS"
  kEventMagic = 0x45534e47u,    // "GNSE"
  kDeadHandle = 0xdeaddeadu,
};

inline uint32_t handle_magic(const void* p) {
  uint32_t m;
  std::memcpy(&m, p, sizeof m);
  return m;
}

// Prints "genesis: GENESIS_CHECKED: <fn>: <kind> <p> <what>" and aborts.
[[noreturn]] void checked_abort(const char* fn, const char* kind, const void* p, const char* what);

// In checked mode, aborts unless p (not NULL) is a live handle of `magic`.
inline void check_live(const void* p, uint32_t magic, const char* fn, const char* kind) {
  if (!p || !checked_mode()) return;
  const uint32_t m = handle_magic(p);
  if (m == magic) return;
  checked_abort(fn, kind, p,
                m == kDeadHandle ? "was already released or destroyed (a second release, or a use after the end)"
                                 : "is not a live handle of this kind");
}

// Ends a handle: delete, or in checked mode destroy and keep the memory as a
// dead mark (a few bytes per handle, never reused).
// Keeps a retired handle's memory listed, so it stays reachable: it is kept on purpose, and
// LeakSanitizer would otherwise report every handle of a checked run as a leak.
void keep_retired(void* p);

template <class T>
void retire(T* p) {
  if (!checked_mode()) {
    delete p;
    return;
  }
  p->~T();
  const uint32_t dead = kDeadHandle;
  std::memcpy(static_cast<void*>(p), &dead, sizeof dead);
  keep_retired(p);
}

}  // namespace genesis::core

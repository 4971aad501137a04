// backends/cpu/common.h - shared pieces of the oneDNN CPU backend: the engine
// and stream, dtype and memory-descriptor mapping, a primitive cache keyed by
// shape/dtype/strides, thread control and the DNNL_CHECK macro.
#pragma once

#include <omp.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <list>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "genesis/sdk/sdk.h"
#include "threads.h"

namespace gn::cpu {

using gn::sdk::fail;

// Run a oneDNN call; an "unimplemented" answer becomes GN_ERR_UNSUPPORTED (the
// dispatcher then falls back to the reference kernel), anything else an
// internal error naming file:line.
#define DNNL_CHECK(expr)                                   \
  do {                                                     \
    try {                                                  \
      expr;                                                \
    } catch (const dnnl::error& e_) {                      \
      ::gn::cpu::dnnl_fail(e_, #expr, __FILE__, __LINE__); \
    }                                                      \
  } while (0)

[[noreturn]] void dnnl_fail(const dnnl::error& e, const char* expr, const char* file, int line);

// The process-wide CPU engine and its (synchronous) stream.
dnnl::engine& engine();
dnnl::stream& stream();

// oneDNN sizes its OpenMP team by omp_get_max_threads(), a per-thread value:
// at 1 it runs the primitive on the calling thread with no team to start.
// Every primitive runs that way here (the pool, threads.h, splits the big
// ones), except convolutions, whose primitives are not split: they get a team
// of num_threads(). The caller's value is restored on the way out.
class OmpThreads {
 public:
  explicit OmpThreads(int n) : saved_(omp_get_max_threads()) {
    if (saved_ != n) omp_set_num_threads(n);
  }
  ~OmpThreads() {
    if (omp_get_max_threads() != saved_) omp_set_num_threads(saved_);
  }
  OmpThreads(const OmpThreads&) = delete;
  OmpThreads& operator=(const OmpThreads&) = delete;

 private:
  int saved_;
};

// gn_dtype -> oneDNN data type; undef when oneDNN has none.
inline dnnl::memory::data_type dnnl_dtype(int32_t dtype) {
  using dt = dnnl::memory::data_type;
  switch (dtype) {
    case GN_F32: return dt::f32;
    case GN_BF16: return dt::bf16;
    case GN_F16: return dt::f16;
    case GN_I32: return dt::s32;
    case GN_I8: return dt::s8;
    case GN_U8: return dt::u8;
    default: return dt::undef;
  }
}

// Dense row-major strides of a shape.
inline std::vector<int64_t> dense_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size());
  int64_t acc = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    s[i] = acc;
    acc *= shape[i] > 0 ? shape[i] : 1;
  }
  return s;
}

// Memory descriptor for dims/strides (elements).  oneDNN wants at least 1-D.
inline dnnl::memory::desc make_md(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
                                  int32_t dtype) {
  if (dims.empty()) return dnnl::memory::desc({1}, dnnl_dtype(dtype), dnnl::memory::dims{1});
  return dnnl::memory::desc(dnnl::memory::dims(dims.begin(), dims.end()), dnnl_dtype(dtype),
                            dnnl::memory::dims(strides.begin(), strides.end()));
}

inline std::vector<int64_t> shape_of(const gn_tensor_view& v) { return {v.shape, v.shape + v.ndim}; }
inline std::vector<int64_t> strides_of(const gn_tensor_view& v) { return {v.strides, v.strides + v.ndim}; }
inline void* data_of(const gn_tensor_view& v) { return gn_view_ptr(&v); }

// memcpy / memmove / memset that accept n == 0 with NULL pointers (the data of an empty tensor may
// be NULL, and the C functions' pointers must not be even then).
inline void copy_bytes(void* d, const void* s, size_t n) {
  if (n) std::memcpy(d, s, n);
}
inline void move_bytes(void* d, const void* s, size_t n) {
  if (n) std::memmove(d, s, n);
}
inline void set_bytes(void* d, int v, size_t n) {
  if (n) std::memset(d, v, n);
}

// Primitive cache key: a flat byte string of the integers that decide a primitive.
struct Key {
  std::string bytes;
  explicit Key(const char* tag) : bytes(tag) { bytes.push_back('\0'); }
  Key& add(int64_t v) {
    bytes.append((const char*)&v, sizeof(v));
    return *this;
  }
  Key& add(double v) {
    bytes.append((const char*)&v, sizeof(v));
    return *this;
  }
  Key& add(const std::vector<int64_t>& v) {
    add((int64_t)v.size());
    bytes.append((const char*)v.data(), v.size() * sizeof(int64_t));
    return *this;
  }
};

// A cached primitive plus what executing it needs besides the data pointers.
struct Cached {
  bool supported = false;  // false: oneDNN has no implementation (remembered)
  dnnl::primitive prim;
  dnnl::memory::desc src_md, src1_md, dst_md, aux_md;  // per-family meaning
  dnnl::memory::desc scratch_md;                       // user-mode scratchpad
  size_t scratch_bytes = 0;
  std::string impl;  // impl_info_str, for debugging
};

// Thread-safe cache: look up key, or build with make() and remember the result
// (including "unsupported", so a refused shape is not retried every call).
// Least recently used entries go beyond kPrimitiveCacheSize per call site: a
// serving engine's steps see a new token count almost every step, and each
// count is a primitive of its own (with its JIT code).
constexpr size_t kPrimitiveCacheSize = 512;
template <class Make>
std::shared_ptr<const Cached> cached(const Key& key, Make&& make) {
  using Entry = std::pair<std::string, std::shared_ptr<const Cached>>;
  static std::mutex mu;
  static std::list<Entry> lru;  // most recent first
  static std::unordered_map<std::string, typename std::list<Entry>::iterator> map;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = map.find(key.bytes);
    if (it != map.end()) {
      lru.splice(lru.begin(), lru, it->second);
      return it->second->second;
    }
  }
  auto c = std::make_shared<Cached>();
  try {
    make(*c);
    c->supported = true;
  } catch (const dnnl::error& e) {
    if (e.status != dnnl_unimplemented) dnnl_fail(e, "primitive creation", __FILE__, __LINE__);
    c->supported = false;
  }
  std::lock_guard<std::mutex> lock(mu);
  auto it = map.find(key.bytes);  // another thread may have built it meanwhile
  if (it != map.end()) return it->second->second;
  lru.emplace_front(key.bytes, std::move(c));
  map.emplace(key.bytes, lru.begin());
  while (lru.size() > kPrimitiveCacheSize) {
    map.erase(lru.back().first);
    lru.pop_back();
  }
  return lru.front().second;
}

// Primitive attributes every primitive here uses: the scratchpad is ours
// (scratchpad_mode::user), so concurrent calls from several threads never share
// oneDNN's global scratchpad.
inline dnnl::primitive_attr base_attr() {
  dnnl::primitive_attr a;
  a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return a;
}

// Record what a freshly made primitive_desc needs at execution time.
template <class PD>
void finish(Cached& e, const PD& pd) {
  e.impl = pd.impl_info_str();
  e.scratch_md = pd.scratchpad_desc();
  e.scratch_bytes = e.scratch_md.get_size();
}

// Wrap a user pointer as oneDNN memory (no copy).
inline dnnl::memory mem(const dnnl::memory::desc& md, const void* p) {
  return dnnl::memory(md, engine(), const_cast<void*>(p));
}

// Execute c.prim with args plus a scratchpad from the kernel workspace (or a
// thread-local buffer when the core has none to give, or ctx is NULL), on the
// calling thread alone.
void execute(const gn_kernel_ctx* ctx, const Cached& c, std::unordered_map<int, dnnl::memory> args);

// Below this many output elements a C++ loop on the calling thread beats a
// oneDNN primitive call (~1 us of setup, ~1 us more for its OpenMP region).
constexpr int64_t kSmallNumel = 4096;

// "[op] message" errors.
[[noreturn]] inline void fail_op(int32_t code, const char* op, const std::string& msg) {
  fail(code, std::string("[") + op + "] " + msg);
}

}  // namespace gn::cpu

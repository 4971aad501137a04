// backends/cpu/plugin.cpp - the oneDNN CPU backend: device type "cpu" with
// score 100 (outranks the reference plugin), host memory from the caching
// allocator, synchronous streams/events, threads from the runtime option
// "num_threads" or GENESIS_NUM_THREADS (default: all cores), and the kernels
// of ops/<tier>/*.cpp (tiers.h).  Ops not registered here fall back to the
// reference backend.
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <set>
#include <string>
#include <thread>

#include "allocator.h"
#include "common.h"
#include "tiers.h"
#include "genesis/sdk/host_device.h"

namespace gn::cpu {

// ----------------------------------------------------------------------------
// engine, stream, errors, threads

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

// One stream per thread: a oneDNN stream is not meant to be shared between
// threads that execute at the same time.
dnnl::stream& stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

void execute(const gn_kernel_ctx* ctx, const Cached& c, std::unordered_map<int, dnnl::memory> args) {
  if (c.scratch_bytes) {
    void* p = ctx && ctx->workspace ? ctx->workspace(ctx, c.scratch_bytes) : nullptr;
    thread_local std::vector<char> local;
    if (!p) {
      if (local.size() < c.scratch_bytes) local.resize(c.scratch_bytes);
      p = local.data();
    }
    args.emplace(DNNL_ARG_SCRATCHPAD, mem(c.scratch_md, p));
  }
  const OmpThreads one(1);
  DNNL_CHECK(c.prim.execute(stream(), args));
}

void dnnl_fail(const dnnl::error& e, const char* expr, const char* file, int line) {
  const int32_t code = e.status == dnnl_unimplemented   ? GN_ERR_UNSUPPORTED
                       : e.status == dnnl_out_of_memory ? GN_ERR_OUT_OF_MEMORY
                                                        : GN_ERR_INTERNAL;
  fail(code, std::string("[cpu] oneDNN: ") + e.what() + " (status " + std::to_string((int)e.status) + ") in " + expr +
                 " at " + file + ":" + std::to_string(line));
}

namespace {

const gn_host_api* host() { return gn::sdk::host_ref(); }

// Parse a positive thread count; 0 when absent or malformed.
int parse_threads(const char* s) {
  if (!s || !*s) return 0;
  char* end = nullptr;
  long v = std::strtol(s, &end, 10);
  return (end && *end == '\0' && v > 0 && v <= 4096) ? (int)v : 0;
}

// ----------------------------------------------------------------------------
// device vtable

template <class F>
gn_status* guarded(F&& f) {
  return gn::sdk::guard(host(), std::forward<F>(f));
}

gn_status* dev_count(void*, int32_t* count) {
  *count = 1;
  return nullptr;
}

gn_status* dev_props(void*, int32_t index, gn_device_props* props) {
  return guarded([&] {
    if (index != 0) fail(GN_ERR_DEVICE, "[cpu] there is only cpu:0");
    gn_device_props p{};
    p.struct_size = props->struct_size;
    const dnnl_version_t* v = dnnl_version();
    std::string name = "host (oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
                       std::to_string(v->patch) + ", " + std::to_string(num_threads()) + " threads)";
    std::strncpy(p.name, name.c_str(), sizeof(p.name) - 1);
    long pages = sysconf(_SC_PHYS_PAGES), avail = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    p.total_memory = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
    p.free_memory = avail > 0 && page > 0 ? (uint64_t)avail * (uint64_t)page : 0;
    p.multiprocessors = available_cores();
    size_t n = props->struct_size < sizeof(p) ? props->struct_size : sizeof(p);
    std::memcpy(props, &p, n);
  });
}

gn_status* dev_alloc(void*, int32_t, size_t bytes, void*, void** ptr) {
  *ptr = nullptr;
  return guarded([&] { *ptr = host_allocator().allocate(bytes); });
}

gn_status* dev_free(void*, int32_t, void* ptr, void*) {
  return guarded([&] { host_allocator().release(ptr); });
}

gn_status* dev_memory_stats(void*, int32_t, gn_memory_stats* stats) {
  gn_memory_stats s = host_allocator().stats();
  s.struct_size = stats->struct_size;
  size_t n = stats->struct_size < sizeof(s) ? stats->struct_size : sizeof(s);
  std::memcpy(stats, &s, n);
  return nullptr;
}

gn_status* dev_empty_cache(void*, int32_t) {
  host_allocator().empty_cache();
  return nullptr;
}

gn_status* dev_reset_peak(void*, int32_t) {
  host_allocator().reset_peak();
  return nullptr;
}

// Large copies/memsets are split over the threads (memory bandwidth of one
// core is not that of the socket).
constexpr size_t kParallelBytes = size_t(4) << 20;

gn_status* dev_copy(void*, int32_t, void* dst, const void* src, size_t bytes, int32_t, void*) {
  if (!bytes || dst == src) return nullptr;
  const char* s = (const char*)src;
  char* d = (char*)dst;
  const bool overlap = d < s + bytes && s < d + bytes;
  if (bytes < kParallelBytes || overlap) {
    std::memmove(d, s, bytes);
    return nullptr;
  }
  const size_t chunk = size_t(1) << 20;
  parallel_chunks((int64_t)((bytes + chunk - 1) / chunk), [&](int64_t i) {
    size_t off = (size_t)i * chunk;
    std::memcpy(d + off, s + off, std::min(chunk, bytes - off));
  });
  return nullptr;
}

gn_status* dev_memset(void*, int32_t, void* dst, int32_t value, size_t bytes, void*) {
  if (!bytes) return nullptr;
  char* d = (char*)dst;
  if (bytes < kParallelBytes) {
    std::memset(d, value, bytes);
    return nullptr;
  }
  const size_t chunk = size_t(1) << 20;
  parallel_chunks((int64_t)((bytes + chunk - 1) / chunk), [&](int64_t i) {
    size_t off = (size_t)i * chunk;
    std::memset(d + off, value, std::min(chunk, bytes - off));
  });
  return nullptr;
}

// ----------------------------------------------------------------------------
// init

std::string g_description;

// The runtime that loaded the plugin is gone, and with it every tensor: hand
// the cached blocks back.  The library may be unloaded next, and a cache left
// in it would be lost (the next load starts a new allocator).
void shutdown(void*) {
  release_pool();
  host_allocator().empty_cache();
  host_allocator_release();
}

// The OpenMP runtime's worker threads outlive every parallel region and cannot
// be stopped; unmapping the runtime under them (this plugin unloaded, with
// libgomp its last user) crashes them.  Keep it loaded for the process.
void pin_openmp_runtime() {
  Dl_info where{};
  if (dladdr(reinterpret_cast<void*>(&omp_get_num_procs), &where) && where.dli_fname)
    dlopen(where.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

// The order in which the kernels of one (op, dtype) are tried.  The core runs
// a cell's candidates in registration order, and a kernel that answers
// GN_ERR_UNSUPPORTED passes the call to the next (then to the reference
// plugin).  So oneDNN primitives register first, the vectorised C++ loops
// (f32/f64) next, the generic C++ paths (every other dtype and layout, the
// reference's formulas) last.  A family file registers each of its dtypes in
// one tier; tiers.h lists the files of each tier (ops/<tier>/<stem>.cpp, one
// per section of core/ops/ops.def), docs/architecture.md describes the tiers.
struct KernelTier {
  const char* name;
  std::initializer_list<void (*)(const gn::sdk::Registrar&)> families;
};
const KernelTier kTiers[] = {
    {"oneDNN",
     {onednn::register_unary, onednn::register_binary, onednn::register_softmax, onednn::register_linalg,
      onednn::register_norm, onednn::register_conv, onednn::register_llm}},
    {"SIMD loops",
     {simd::register_unary, simd::register_binary, simd::register_creation, simd::register_reduce, simd::register_norm,
      simd::register_rope, simd::register_activation, simd::register_loss, simd::register_attention,
      simd::register_indexing, simd::register_shape, simd::register_sort, simd::register_pool, simd::register_optim,
      simd::register_llm, simd::register_cumulative, simd::register_linalg_decomp, simd::register_paged}},
    {"generic", {generic::register_unary, generic::register_binary}},
};

// (op, dtype) pairs registered so far: the host's register_kernel, recorded.
std::set<std::pair<std::string, int32_t>> g_registered;
gn_host_api g_recording_host;
gn_status* (*g_recording_host_next)(void* host_ctx, const gn_kernel_desc* kernel) = nullptr;
gn_status* record_kernel(void* host_ctx, const gn_kernel_desc* k) {
  gn_status* st = g_recording_host_next(host_ctx, k);
  if (!st) g_registered.emplace(k->op, k->dtype);
  return st;
}

void init_tables(const gn_host_api* h, gn_plugin_info* info);

// Options after load: "num_threads" (NULL = the default again).
gn_status* set_option(void*, const char* key, const char* value) {
  return guarded([&] {
    if (!key || std::strcmp(key, "num_threads") != 0) return;
    const int n = value ? parse_threads(value) : 0;
    if (value && !n)
      fail(GN_ERR_INVALID_ARGUMENT,
           std::string("[cpu] num_threads must be a whole number from 1 to 4096, not '") + value + "'");
    set_num_threads(n);
  });
}

int32_t get_option(void*, const char* key, char* buf, size_t cap) {
  if (!key || std::strcmp(key, "num_threads") != 0 || !buf || !cap) return 0;
  std::snprintf(buf, cap, "%d", num_threads());
  return 1;
}

void init(const gn_host_api* h, gn_plugin_info* info) {
  host_allocator_acquire();  // released by shutdown, or here when init fails (no shutdown then)
  try {
    init_tables(h, info);
  } catch (...) {
    host_allocator_release();
    throw;
  }
}

void init_tables(const gn_host_api* h, gn_plugin_info* info) {
  pin_openmp_runtime();
  // Threads: the runtime option, else the default (threads.h).
  init_threads(parse_threads(h->option_get ? h->option_get(h->host_ctx, "num_threads") : nullptr));

  const dnnl_version_t* v = dnnl_version();
  g_description = "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
                  std::to_string(v->patch) +
                  " CPU backend: every built-in op (oneDNN primitives for matmul, eltwise, binary, softmax, "
                  "layer_norm, conv2d; vectorised C++ loops for the rest; dtypes per op below); " +
                  std::to_string(num_threads()) + " threads";
  info->description = g_description.c_str();
  info->shutdown = shutdown;
  if (info->struct_size >= GN_STRUCT_END(gn_plugin_info, get_option)) {  // a host of minor 3 or later
    info->set_option = set_option;
    info->get_option = get_option;
  }

  gn_device_vtable vt{};
  vt.struct_size = sizeof(vt);
  vt.name = "cpu";
  vt.score = 100;
  vt.flags = GN_DEVICE_HOST_MEMORY;
  vt.ctx = &host_allocator();
  vt.device_count = dev_count;
  vt.device_props = dev_props;
  vt.alloc = dev_alloc;
  vt.free = dev_free;
  vt.memory_stats = dev_memory_stats;
  vt.empty_cache = dev_empty_cache;
  vt.reset_peak_stats = dev_reset_peak;
  gn::sdk::fill_host_device_slots(vt);  // synchronous streams and events
  vt.copy = dev_copy;
  vt.memset = dev_memset;
  gn::sdk::throw_if(h, h->register_device_type(h->host_ctx, &vt));

  g_registered.clear();
  g_recording_host = *h;
  g_recording_host_next = h->register_kernel;
  g_recording_host.register_kernel = record_kernel;
  gn::sdk::Registrar r(&g_recording_host, "cpu");
  for (const KernelTier& tier : kTiers)
    for (void (*reg)(const gn::sdk::Registrar&) : tier.families) reg(r);
}

}  // namespace

bool tier_serves(const char* op, int32_t dtype) { return g_registered.count({op, dtype}) > 0; }

}  // namespace gn::cpu

GN_SDK_PLUGIN("cpu", "0.1.0", "oneDNN CPU backend", gn::cpu::init)

// backends/reference/plugin.cpp - the reference backend: device type "cpu" with
// the lowest score (any real CPU backend outranks it), a plain aligned-malloc
// allocator with statistics, no-op streams and events, and the naive kernels
// of every op family (families.h).  It is the oracle other backends are tested
// against, so every kernel favours being obviously right over being fast.
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "families.h"
#include "genesis/sdk/host_device.h"

namespace gn::reference {
namespace {

// ----------------------------------------------------------------------------
// allocator: 64-byte aligned malloc; a 64-byte header in front of each block
// remembers its size so that free can update the statistics.

constexpr size_t kAlign = 64;

struct HostState {
  std::atomic<uint64_t> allocated{0}, peak_allocated{0}, num_allocs{0}, num_frees{0}, active_blocks{0};
};

HostState g_state;

void raise_peak(std::atomic<uint64_t>& peak, uint64_t value) {
  uint64_t cur = peak.load(std::memory_order_relaxed);
  while (cur < value && !peak.compare_exchange_weak(cur, value, std::memory_order_relaxed)) {
  }
}

const gn_host_api* host() { return gn::sdk::host_ref(); }

gn_status* dev_count(void*, int32_t* count) {
  *count = 1;
  return nullptr;
}

gn_status* dev_props(void*, int32_t index, gn_device_props* props) {
  if (index != 0) return host()->status_new(GN_ERR_DEVICE, "[reference] there is only cpu:0");
  // The caller sets struct_size; fill only the fields its struct has.
  gn_device_props p{};
  p.struct_size = props->struct_size;
  std::strncpy(p.name, "host (reference)", sizeof(p.name) - 1);
  long pages = sysconf(_SC_PHYS_PAGES), avail = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  p.total_memory = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
  p.free_memory = avail > 0 && page > 0 ? (uint64_t)avail * (uint64_t)page : 0;
  p.multiprocessors = (int32_t)std::thread::hardware_concurrency();
  size_t n = props->struct_size < sizeof(p) ? props->struct_size : sizeof(p);
  std::memcpy(props, &p, n);
  return nullptr;
}

gn_status* dev_alloc(void*, int32_t, size_t bytes, void*, void** ptr) {
  *ptr = nullptr;
  if (bytes == 0) return nullptr;
  size_t total = kAlign + (bytes + kAlign - 1) / kAlign * kAlign;
  if (total < bytes) return host()->status_new(GN_ERR_OUT_OF_MEMORY, "[reference] allocation size overflows");
  void* block = std::aligned_alloc(kAlign, total);
  if (!block)
    return host()->status_new(
        GN_ERR_OUT_OF_MEMORY,
        ("[reference] out of host memory allocating " + std::to_string(bytes) + " bytes").c_str());
  *(uint64_t*)block = bytes;
  uint64_t now = g_state.allocated.fetch_add(bytes) + bytes;
  raise_peak(g_state.peak_allocated, now);
  g_state.num_allocs.fetch_add(1);
  g_state.active_blocks.fetch_add(1);
  *ptr = (char*)block + kAlign;
  return nullptr;
}

gn_status* dev_free(void*, int32_t, void* ptr, void*) {
  if (!ptr) return nullptr;
  void* block = (char*)ptr - kAlign;
  uint64_t bytes = *(uint64_t*)block;
  std::free(block);
  g_state.allocated.fetch_sub(bytes);
  g_state.num_frees.fetch_add(1);
  g_state.active_blocks.fetch_sub(1);
  return nullptr;
}

gn_status* dev_memory_stats(void*, int32_t, gn_memory_stats* stats) {
  gn_memory_stats s{};
  s.struct_size = stats->struct_size;
  s.allocated = s.reserved = g_state.allocated.load();  // no cache: reserved == allocated
  s.peak_allocated = s.peak_reserved = g_state.peak_allocated.load();
  s.num_allocs = g_state.num_allocs.load();
  s.num_frees = g_state.num_frees.load();
  s.cache_misses = s.num_allocs;
  s.active_blocks = g_state.active_blocks.load();
  size_t n = stats->struct_size < sizeof(s) ? stats->struct_size : sizeof(s);
  std::memcpy(stats, &s, n);
  return nullptr;
}

gn_status* dev_empty_cache(void*, int32_t) { return nullptr; }

gn_status* dev_reset_peak(void*, int32_t) {
  g_state.peak_allocated.store(g_state.allocated.load());
  return nullptr;
}

// ----------------------------------------------------------------------------
// init

void init(const gn_host_api* h, gn_plugin_info*) {
  gn_device_vtable vt{};
  vt.struct_size = sizeof(vt);
  vt.name = "cpu";
  vt.score = 1;
  vt.flags = GN_DEVICE_HOST_MEMORY;
  vt.ctx = &g_state;
  vt.device_count = dev_count;
  vt.device_props = dev_props;
  vt.alloc = dev_alloc;
  vt.free = dev_free;
  vt.memory_stats = dev_memory_stats;
  vt.empty_cache = dev_empty_cache;
  vt.reset_peak_stats = dev_reset_peak;
  gn::sdk::fill_host_device_slots(vt);  // synchronous streams/events, memmove copies
  gn::sdk::throw_if(h, h->register_device_type(h->host_ctx, &vt));

  gn::sdk::Registrar r(h, "cpu");
  register_unary(r);
  register_binary(r);
  register_creation(r);
  register_reduce(r);
  register_softmax(r);
  register_linalg(r);
  register_norm(r);
  register_rope(r);
  register_activation(r);
  register_loss(r);
  register_attention(r);
  register_indexing(r);
  register_shape(r);
  register_sort(r);
  register_conv(r);
  register_pool(r);
  register_optim(r);
  register_llm(r);
  register_cumulative(r);
  register_linalg_decomp(r);
  register_paged(r);
}

}  // namespace
}  // namespace gn::reference

GN_SDK_PLUGIN("reference", "0.1.0", "naive double-precision CPU kernels of every op: the test oracle",
              gn::reference::init)

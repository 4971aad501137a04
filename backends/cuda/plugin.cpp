// backends/cuda/plugin.cpp - the CUDA backend's entry point: device type
// "cuda" (one device per GPU), its vtable (caching allocator, streams,
// events, copies with pinned staging, memset, graph capture), the shared
// helpers declared in common.cuh, and the walk over the self-registered op
// families (ops/*.cu).
//
// Without a GPU or driver the plugin still loads: device_count answers with a
// status whose message is the reason, which `genesis info` shows.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "allocator.h"
#include "common.cuh"

namespace gn::cuda {

// ----------------------------------------------------------------------------
// common.cuh helpers

FamilyRegistration::FamilyRegistration(const char* family_name, void (*register_fn)(const Registrar&))
    : name(family_name), fn(register_fn), next(head()) {
  head() = this;
}

FamilyRegistration*& FamilyRegistration::head() {
  static FamilyRegistration* h = nullptr;
  return h;
}

void cuda_fail(cudaError_t err, const char* expr, const char* file, int line) {
  (void)cudaGetLastError();  // clear a non-sticky error so the next call starts clean
  const int32_t code = err == cudaErrorMemoryAllocation ? GN_ERR_OUT_OF_MEMORY : GN_ERR_DEVICE;
  const char* base = std::strrchr(file, '/');
  fail(code, std::string("[cuda] ") + cudaGetErrorName(err) + ": " + cudaGetErrorString(err) + " in " + expr + " at " +
                 (base ? base + 1 : file) + ":" + std::to_string(line));
}

// The CUDA runtime is linked statically: its current device belongs to this
// plugin alone (an application's own cudart has its own), so the device this
// thread last set is remembered and no call is made when it is already
// current (the hot path of every kernel: no cudaGetDevice, no restore).
namespace {
thread_local int t_current_device = -1;
}

DeviceGuard::DeviceGuard(int index) {
  if (t_current_device != index) {
    GN_CUDA_CHECK(cudaSetDevice(index));
    t_current_device = index;
  }
}

int current_device_index() { return t_current_device; }

// The driver's entry point `name` (CUDA 12.0 version), or null where there is none.
static void* driver_entry(const char* name) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult q{};
  if (cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  return p;
}

DriverLaunchFn driver_launch() {
  static const DriverLaunchFn fn = [] {
    if (std::getenv("GENESIS_CUDA_RUNTIME_LAUNCH")) return DriverLaunchFn(nullptr);  // A/B switch (bench)
    return reinterpret_cast<DriverLaunchFn>(driver_entry("cuLaunchKernel"));
  }();
  return fn;
}

bool pdl_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("GENESIS_CUDA_NO_PDL");
    return !(e && *e && std::string(e) != "0");
  }();
  return on;
}

DriverLaunchExFn driver_launch_ex() {
  static const DriverLaunchExFn fn = [] {
    if (!pdl_enabled() || !driver_launch()) return DriverLaunchExFn(nullptr);
    return reinterpret_cast<DriverLaunchExFn>(driver_entry("cuLaunchKernelEx"));
  }();
  return fn;
}

void driver_fail(CUresult r, const char* what) {
  using GetStr = CUresult (*)(CUresult, const char**);
  static GetStr get_name = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuGetErrorName", &p, 12000, cudaEnableDefault, &q) != cudaSuccess) {
      (void)cudaGetLastError();
      p = nullptr;
    }
    return reinterpret_cast<GetStr>(p);
  }();
  const char* name = nullptr;
  if (get_name) get_name(r, &name);
  fail(r == CUDA_ERROR_OUT_OF_MEMORY ? GN_ERR_OUT_OF_MEMORY : GN_ERR_DEVICE,
       std::string("[cuda] ") + what + " failed: " + (name ? name : "CUresult " + std::to_string((int)r)));
}

DeviceGuard::~DeviceGuard() {}

const cudaDeviceProp& device_prop(int index) {
  static std::mutex mu;
  static std::map<int, cudaDeviceProp> props;
  std::lock_guard<std::mutex> lock(mu);
  auto it = props.find(index);
  if (it != props.end()) return it->second;
  cudaDeviceProp p{};
  GN_CUDA_CHECK(cudaGetDeviceProperties(&p, index));
  return props.emplace(index, p).first->second;
}

int sm_count_of(int index) {
  static std::atomic<int> cache[64] = {};
  if (index >= 0 && index < 64) {
    const int c = cache[index].load(std::memory_order_relaxed);
    if (c) return c;
    const int v = device_prop(index).multiProcessorCount;
    cache[index].store(v, std::memory_order_relaxed);
    return v;
  }
  return device_prop(index).multiProcessorCount;
}

std::string shape_str(const gn_tensor_view& v) {
  std::string s = "(";
  for (int32_t d = 0; d < v.ndim; ++d) s += (d ? ", " : "") + std::to_string(v.shape[d]);
  return s + ")";
}

static const gn_attr_value& attr_at(const char* op, const gn_attr_value* attrs, size_t n, size_t i, int32_t kind) {
  if (i >= n || !attrs || attrs[i].kind != kind)
    fail_op(GN_ERR_INVALID_ARGUMENT, op, "attribute " + std::to_string(i) + " is missing or of the wrong kind");
  return attrs[i];
}
int64_t attr_int(const char* op, const gn_attr_value* a, size_t n, size_t i) {
  return attr_at(op, a, n, i, GN_ATTR_INT).u.i;
}
double attr_float(const char* op, const gn_attr_value* a, size_t n, size_t i) {
  return attr_at(op, a, n, i, GN_ATTR_FLOAT).u.f;
}
Dims attr_ints(const char* op, const gn_attr_value* a, size_t n, size_t i) {
  const gn_attr_value& v = attr_at(op, a, n, i, GN_ATTR_INTS);
  if (v.u.ints.size == 0) return {};
  if (!v.u.ints.data) fail_op(GN_ERR_INVALID_ARGUMENT, op, "attribute " + std::to_string(i) + " has no data");
  return Dims(v.u.ints.data, v.u.ints.data + v.u.ints.size);
}
void need_io(const char* op, size_t n_in, size_t want_in, size_t n_out, size_t want_out) {
  if (n_in < want_in || n_out < want_out)
    fail_op(GN_ERR_INVALID_ARGUMENT, op,
            "needs " + std::to_string(want_in) + " inputs and " + std::to_string(want_out) + " outputs, got " +
                std::to_string(n_in) + " and " + std::to_string(n_out));
}

namespace {

const gn_host_api* host() { return gn::sdk::host_ref(); }

template <class F>
gn_status* guarded(F&& f) {
  return gn::sdk::guard(host(), std::forward<F>(f));
}

// guarded(f) with device `index` current while f runs.
template <class F>
gn_status* guarded_on(int32_t index, F&& f) {
  return guarded([&] {
    DeviceGuard g(index);
    f();
  });
}

// ----------------------------------------------------------------------------
// pinned staging for host -> device copies from pageable memory: the bytes
// are copied into a cached pinned block and the device copy is truly async;
// the block is reused once its event has completed.

class PinnedStaging {
 public:
  static constexpr size_t kMaxStaged = size_t(4) << 20;   // larger copies go direct
  static constexpr size_t kMaxCached = size_t(64) << 20;  // pinned bytes kept at most

  // Copy src into pinned memory and enqueue the H2D copy on stream; false
  // when staging is not worth it (the caller then copies directly).
  bool copy_h2d(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
    if (bytes > kMaxStaged) return false;
    const size_t cls = size_class(bytes);
    std::lock_guard<std::mutex> lock(mu_);
    poll();
    void* p = nullptr;
    auto it = free_.find(cls);
    if (it != free_.end()) {
      p = it->second;
      free_.erase(it);
    } else {
      if (cached_ + cls > kMaxCached) return false;
      GN_CUDA_CHECK(cudaHostAlloc(&p, cls, cudaHostAllocPortable));
      cached_ += cls;
    }
    std::memcpy(p, src, bytes);
    cudaEvent_t ev;
    if (!events_.empty()) {
      ev = events_.back();
      events_.pop_back();
    } else {
      GN_CUDA_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    }
    cudaError_t err = cudaMemcpyAsync(dst, p, bytes, cudaMemcpyHostToDevice, stream);
    if (err == cudaSuccess) err = cudaEventRecord(ev, stream);
    if (err != cudaSuccess) {
      free_.emplace(cls, p);
      events_.push_back(ev);
      cuda_fail(err, "cudaMemcpyAsync (staged host to device)", __FILE__, __LINE__);
    }
    in_flight_.push_back({ev, p, cls});
    return true;
  }

 private:
  struct Flight {
    cudaEvent_t ev;
    void* p;
    size_t cls;
  };
  static size_t size_class(size_t bytes) {
    size_t c = 4096;
    while (c < bytes) c <<= 1;
    return c;
  }
  void poll() {
    size_t kept = 0;
    for (size_t i = 0; i < in_flight_.size(); ++i) {
      Flight& f = in_flight_[i];
      cudaError_t q = cudaEventQuery(f.ev);
      if (q == cudaErrorNotReady) {
        in_flight_[kept++] = f;
        continue;
      }
      (void)cudaGetLastError();
      free_.emplace(f.cls, f.p);
      events_.push_back(f.ev);
    }
    in_flight_.resize(kept);
  }

  std::mutex mu_;
  std::multimap<size_t, void*> free_;
  std::vector<Flight> in_flight_;
  std::vector<cudaEvent_t> events_;
  size_t cached_ = 0;
};

PinnedStaging& staging() {
  static PinnedStaging* s = new PinnedStaging;  // never destroyed: outlives the CUDA context at exit
  return *s;
}

// ----------------------------------------------------------------------------
// device vtable

std::string g_count_error;  // why there are no devices (set at init)

gn_status* dev_count(void*, int32_t* count) {
  *count = 0;
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return host()->status_new(GN_ERR_DEVICE, (std::string("no usable CUDA device: ") + cudaGetErrorName(err) + " (" +
                                              cudaGetErrorString(err) + ")")
                                                 .c_str());
  }
  if (n == 0) return host()->status_new(GN_ERR_DEVICE, "no CUDA device: cudaGetDeviceCount returned 0");
  *count = n;
  return nullptr;
}

gn_status* dev_props(void*, int32_t index, gn_device_props* props) {
  return guarded([&] {
    const cudaDeviceProp& cp = device_prop(index);
    gn_device_props p{};
    p.struct_size = props->struct_size;
    const size_t name_len = strnlen(cp.name, sizeof(p.name) - 1);  // truncated to fit; p is zeroed, so terminated
    std::memcpy(p.name, cp.name, name_len);
    p.total_memory = cp.totalGlobalMem;
    size_t free_b = 0, total_b = 0;
    {
      DeviceGuard g(index);
      if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess)
        p.free_memory = free_b;
      else
        (void)cudaGetLastError();
    }
    p.compute_major = cp.major;
    p.compute_minor = cp.minor;
    p.multiprocessors = cp.multiProcessorCount;
    size_t n = props->struct_size < sizeof(p) ? props->struct_size : sizeof(p);
    std::memcpy(props, &p, n);
  });
}

gn_status* dev_alloc(void*, int32_t index, size_t bytes, void* stream, void** ptr) {
  *ptr = nullptr;
  return guarded([&] {
    DeviceAllocator& a = device_allocator(index);
    DeviceGuard g(index);
    *ptr = a.allocate(bytes, static_cast<cudaStream_t>(stream));
  });
}

gn_status* dev_free(void*, int32_t index, void* ptr, void* stream) {
  return guarded([&] {
    DeviceAllocator& a = device_allocator(index);
    DeviceGuard g(index);
    a.release(ptr, static_cast<cudaStream_t>(stream));
  });
}

gn_status* dev_memory_stats(void*, int32_t index, gn_memory_stats* stats) {
  return guarded([&] {
    gn_memory_stats s = device_allocator(index).stats();
    s.struct_size = stats->struct_size;
    size_t n = stats->struct_size < sizeof(s) ? stats->struct_size : sizeof(s);
    std::memcpy(stats, &s, n);
  });
}

gn_status* dev_empty_cache(void*, int32_t index) {
  return guarded_on(index, [&] { device_allocator(index).empty_cache(); });
}

gn_status* dev_reset_peak(void*, int32_t index) {
  return guarded([&] { device_allocator(index).reset_peak(); });
}

gn_status* stream_create(void*, int32_t index, void** s) {
  return guarded_on(index, [&] {
    cudaStream_t st;
    GN_CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    *s = st;
  });
}

gn_status* stream_destroy(void*, int32_t index, void* s) {
  return guarded([&] {
    if (!s) return;  // the default stream is not ours to destroy
    DeviceGuard g(index);
    GN_CUDA_CHECK(cudaStreamDestroy(static_cast<cudaStream_t>(s)));
  });
}

gn_status* stream_sync(void*, int32_t index, void* s) {
  return guarded_on(index, [&] { GN_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(s))); });
}

gn_status* event_create(void*, int32_t index, void** e) {
  return guarded_on(index, [&] {
    cudaEvent_t ev;
    GN_CUDA_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    *e = ev;
  });
}

gn_status* event_destroy(void*, int32_t index, void* e) {
  return guarded_on(index, [&] { GN_CUDA_CHECK(cudaEventDestroy(static_cast<cudaEvent_t>(e))); });
}

gn_status* event_record(void*, int32_t index, void* e, void* s) {
  return guarded_on(index,
                    [&] { GN_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(e), static_cast<cudaStream_t>(s))); });
}

gn_status* stream_wait_event(void*, int32_t index, void* s, void* e) {
  return guarded_on(
      index, [&] { GN_CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(s), static_cast<cudaEvent_t>(e), 0)); });
}

gn_status* event_query(void*, int32_t index, void* e, int32_t* done) {
  return guarded_on(index, [&] {
    cudaError_t q = cudaEventQuery(static_cast<cudaEvent_t>(e));
    if (q == cudaErrorNotReady) {
      (void)cudaGetLastError();
      *done = 0;
      return;
    }
    GN_CUDA_CHECK(q);
    *done = 1;
  });
}

gn_status* event_sync(void*, int32_t index, void* e) {
  return guarded_on(index, [&] { GN_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(e))); });
}

gn_status* device_sync(void*, int32_t index) {
  return guarded_on(index, [&] { GN_CUDA_CHECK(cudaDeviceSynchronize()); });
}

gn_status* dev_copy(void*, int32_t index, void* dst, const void* src, size_t bytes, int32_t kind, void* stream) {
  return guarded([&] {
    if (!bytes) return;
    DeviceGuard g(index);
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    switch (kind) {
      case GN_COPY_HOST_TO_DEVICE: {
        cudaPointerAttributes attr{};
        bool pageable = true;
        if (cudaPointerGetAttributes(&attr, src) == cudaSuccess)
          pageable = attr.type == cudaMemoryTypeUnregistered;
        else
          (void)cudaGetLastError();
        if (pageable && staging().copy_h2d(dst, src, bytes, s)) return;
        GN_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s));
        break;
      }
      case GN_COPY_DEVICE_TO_HOST:
        // Into pageable memory the call returns once the bytes are there.
        GN_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s));
        break;
      case GN_COPY_DEVICE_TO_DEVICE:
        GN_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s));  // peer copies too (UVA)
        break;
      default: fail(GN_ERR_INVALID_ARGUMENT, "[cuda] copy: unknown copy kind " + std::to_string(kind));
    }
  });
}

gn_status* dev_memset(void*, int32_t index, void* dst, int32_t value, size_t bytes, void* stream) {
  return guarded([&] {
    if (!bytes) return;
    DeviceGuard g(index);
    GN_CUDA_CHECK(cudaMemsetAsync(dst, value, bytes, static_cast<cudaStream_t>(stream)));
  });
}

// ----------------------------------------------------------------------------
// graph capture: the current stream is captured (it must not be the legacy
// default stream, which CUDA cannot capture); allocations made during the
// capture come from a private pool of the allocator, owned by the graph.

struct Graph {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  uint64_t pool = 0;
  int device = 0;
};

gn_status* graph_begin(void*, int32_t index, void* stream) {
  return guarded([&] {
    if (!stream)
      fail(GN_ERR_INVALID_ARGUMENT,
           "[cuda] graph capture needs a non-default stream: create one with gn_stream_create and make it "
           "current with gn_stream_set_current first");
    DeviceGuard g(index);
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    device_allocator(index).begin_capture(s);
    cudaError_t err = cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed);
    if (err != cudaSuccess) {
      device_allocator(index).end_capture(s);
      cuda_fail(err, "cudaStreamBeginCapture", __FILE__, __LINE__);
    }
  });
}

gn_status* graph_end(void*, int32_t index, void* stream, void** out) {
  return guarded_on(index, [&] {
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    auto* gr = new Graph;
    gr->device = index;
    gr->pool = device_allocator(index).end_capture(s);
    cudaError_t err = cudaStreamEndCapture(s, &gr->graph);
    if (err == cudaSuccess) err = cudaGraphInstantiate(&gr->exec, gr->graph, 0);
    if (err != cudaSuccess) {
      if (gr->graph) cudaGraphDestroy(gr->graph);
      if (gr->pool) device_allocator(index).release_pool(gr->pool);
      delete gr;
      cuda_fail(err, "cudaStreamEndCapture/cudaGraphInstantiate", __FILE__, __LINE__);
    }
    *out = gr;
  });
}

gn_status* graph_launch(void*, int32_t index, void* graph, void* stream) {
  return guarded([&] {
    if (!graph) fail(GN_ERR_INVALID_ARGUMENT, "[cuda] graph_launch: NULL graph");
    DeviceGuard g(index);
    GN_CUDA_CHECK(cudaGraphLaunch(static_cast<Graph*>(graph)->exec, static_cast<cudaStream_t>(stream)));
  });
}

gn_status* graph_destroy(void*, int32_t index, void* graph) {
  return guarded([&] {
    if (!graph) return;
    auto* gr = static_cast<Graph*>(graph);
    DeviceGuard g(index);
    // Replays may still run: wait before the private blocks go back to the cache.
    GN_CUDA_CHECK(cudaDeviceSynchronize());
    if (gr->exec) cudaGraphExecDestroy(gr->exec);
    if (gr->graph) cudaGraphDestroy(gr->graph);
    if (gr->pool) device_allocator(index).release_pool(gr->pool);
    delete gr;
  });
}

// ----------------------------------------------------------------------------
// init

std::string g_description;

// The vtable slots (alloc, free, graph_begin, ...) create statuses through
// host() long after init.  Cores since dd1d9ff keep the table alive for the
// process (plugin.h), but cores of the same ABI major before that passed a
// table on the loader's stack, so the plugin keeps its own copy (its host_ctx
// is not used after init).
gn_host_api g_host_copy;

void init(const gn_host_api* h, gn_plugin_info* info) {
  g_host_copy = gn_host_api{};
  std::memcpy(&g_host_copy, h, h->struct_size < sizeof(g_host_copy) ? h->struct_size : sizeof(g_host_copy));
  gn::sdk::set_host(&g_host_copy);
  int rt_version = 0, drv_version = 0, n = 0;
  cudaRuntimeGetVersion(&rt_version);
  if (cudaDriverGetVersion(&drv_version) != cudaSuccess) (void)cudaGetLastError();
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    n = 0;
  }
  auto ver = [](int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); };
  g_description = "CUDA backend (runtime " + ver(rt_version) + ", driver " +
                  (drv_version ? ver(drv_version) : std::string("none")) + ", " + std::to_string(n) +
                  " device(s); caching allocator, streams, graphs)";
  info->description = g_description.c_str();

  gn_device_vtable vt{};
  vt.struct_size = sizeof(vt);
  vt.name = "cuda";
  vt.score = 100;
  vt.flags = 0;
  vt.ctx = nullptr;
  vt.device_count = dev_count;
  vt.device_props = dev_props;
  vt.alloc = dev_alloc;
  vt.free = dev_free;
  vt.memory_stats = dev_memory_stats;
  vt.empty_cache = dev_empty_cache;
  vt.reset_peak_stats = dev_reset_peak;
  vt.stream_create = stream_create;
  vt.stream_destroy = stream_destroy;
  vt.stream_synchronize = stream_sync;
  vt.event_create = event_create;
  vt.event_destroy = event_destroy;
  vt.event_record = event_record;
  vt.stream_wait_event = stream_wait_event;
  vt.event_query = event_query;
  vt.event_synchronize = event_sync;
  vt.device_synchronize = device_sync;
  vt.copy = dev_copy;
  vt.memset = dev_memset;
  vt.graph_begin = graph_begin;
  vt.graph_end = graph_end;
  vt.graph_launch = graph_launch;
  vt.graph_destroy = graph_destroy;
  gn::sdk::throw_if(h, h->register_device_type(h->host_ctx, &vt));

  // Kernels are registered even without a device: `genesis info` lists them,
  // and calls fail with the device's reason.
  gn::sdk::Registrar r(h, "cuda");
  for (FamilyRegistration* f = FamilyRegistration::head(); f; f = f->next) f->fn(r);
}

}  // namespace
}  // namespace gn::cuda

GN_SDK_PLUGIN("cuda", "0.1.0", "CUDA backend", gn::cuda::init)

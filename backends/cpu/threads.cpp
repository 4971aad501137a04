// backends/cpu/threads.cpp - thread count and the worker pool (threads.h).
#include "threads.h"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <cstdio>
#include <ctime>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define GN_CPU_PAUSE() _mm_pause()
#else
#define GN_CPU_PAUSE() std::this_thread::yield()
#endif

namespace gn::cpu {
namespace {

// A positive count from an environment variable ("4", or OpenMP's list form
// "4,2" whose first entry is the outer level); 0 when unset or malformed.
int env_threads(const char* name) {
  const char* s = std::getenv(name);
  if (!s || !*s) return 0;
  char* end = nullptr;
  long v = std::strtol(s, &end, 10);
  if (end == s || (*end != '\0' && *end != ',') || v <= 0 || v > 4096) return 0;
  return (int)v;
}

// ceil(quota / period) from a cgroup CPU limit, 0 when unlimited or absent.
int cgroup_cores() {
  // cgroup v2: "max 100000" or "150000 100000" in the process's cgroup.
  std::string rel;
  {
    std::ifstream f("/proc/self/cgroup");
    std::string line;
    while (std::getline(f, line))
      if (line.rfind("0::", 0) == 0) rel = line.substr(3);
  }
  for (const std::string& dir : {std::string("/sys/fs/cgroup") + rel, std::string("/sys/fs/cgroup")}) {
    std::ifstream f(dir + "/cpu.max");
    std::string quota;
    double period = 0;
    if (f >> quota >> period) {
      if (quota == "max" || period <= 0) return 0;
      return std::max(1, (int)std::ceil(std::atof(quota.c_str()) / period));
    }
  }
  // cgroup v1
  std::ifstream q("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"), p("/sys/fs/cgroup/cpu/cpu.cfs_period_us");
  double quota = 0, period = 0;
  if (q >> quota && p >> period && quota > 0 && period > 0) return std::max(1, (int)std::ceil(quota / period));
  return 0;
}

std::atomic<int> g_explicit{0};  // set_num_threads; 0 = default

// ----------------------------------------------------------------------------
// The pool

// Spin iterations (a pause each, ~30-140 ns) a worker waits for the next loop
// before it sleeps, and the calling thread waits for started chunks before it
// yields: back-to-back ops keep their workers awake, an idle backend burns
// nothing after a fraction of a millisecond. GENESIS_THREAD_SPIN fixes the
// count; by default a worker spins long on a quiet machine and short on a busy
// one (worker_spin_limit).
constexpr int kShortSpin = 2000, kLongSpin = 20000;
int fixed_spin() {  // -1: not set
  static const int n = [] {
    const char* s = std::getenv("GENESIS_THREAD_SPIN");
    return s && *s ? std::max(0, std::atoi(s)) : -1;
  }();
  return n;
}
int spin_limit() {
  const int n = fixed_spin();
  return n >= 0 ? n : kShortSpin;
}
int available_cores_cached();

// Threads runnable on the whole machine now: the fourth field of /proc/loadavg
// ("0.50 0.40 0.30 3/412 12345": 3 runnable), or -1.
int runnable_threads() {
  std::FILE* f = std::fopen("/proc/loadavg", "r");
  if (!f) return -1;
  double a, b, c;
  int running = -1, total = 0;
  if (std::fscanf(f, "%lf %lf %lf %d/%d", &a, &b, &c, &running, &total) != 5) running = -1;
  std::fclose(f);
  return running;
}

// Whether more threads want to run than this process has cores, sampled at
// most every 10 ms. Then every spin iteration of a worker is taken from
// another thread (maybe this process's own calling thread), so workers spin
// short; on a quiet machine a longer spin catches the next op of a training
// step awake (a sleep and wake-up costs tens of microseconds).
bool machine_busy() {
  static std::atomic<int64_t> next_check{0};
  static std::atomic<bool> busy{false};
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  const int64_t now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
  int64_t next = next_check.load(std::memory_order_relaxed);
  if (now >= next && next_check.compare_exchange_strong(next, now + 10000000)) {
    const int running = runnable_threads();
    busy.store(running < 0 || running > available_cores_cached(), std::memory_order_relaxed);
  }
  return busy.load(std::memory_order_relaxed);
}

int worker_spin_limit() {
  const int n = fixed_spin();
  if (n >= 0) return n;
  return machine_busy() ? kShortSpin : kLongSpin;
}

thread_local bool t_in_chunk = false;

class Pool {
 public:
  explicit Pool(int threads) {
    for (int i = 1; i < threads; ++i) {
      workers_.emplace_back([this] { work(); });
      pthread_setname_np(workers_.back().native_handle(), "genesis-cpu");  // named before any loop runs
    }
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_.store(true);
    }
    cv_.notify_all();
    for (std::thread& t : workers_) t.join();
  }
  int size() const { return (int)workers_.size() + 1; }

  // false when another caller holds the pool (run serially then).
  bool run(int64_t chunks, void (*fn)(void*, int64_t), void* ctx) {
    std::unique_lock<std::mutex> busy(submit_, std::try_to_lock);
    if (!busy.owns_lock()) return false;
    Loop loop;
    {
      std::lock_guard<std::mutex> lock(mu_);
      loop = Loop{++gen_, fn, ctx, chunks};
      loop_ = loop;
      done_.store(0, std::memory_order_relaxed);
      error_ = nullptr;
      claim_.store(loop.gen << 32, std::memory_order_release);
      if (sleepers_ > 0) cv_.notify_all();
    }
    take_chunks(loop);
    for (int spin = 0; done_.load(std::memory_order_acquire) < chunks; ++spin) {
      if (spin < spin_limit())
        GN_CPU_PAUSE();
      else
        std::this_thread::yield();
    }
    if (error_) std::rethrow_exception(error_);
    return true;
  }

 private:
  struct Loop {
    uint64_t gen = 0;
    void (*fn)(void*, int64_t) = nullptr;
    void* ctx = nullptr;
    int64_t chunks = 0;
  };

  // Claims and runs chunks of `loop` until none is left (or a newer loop
  // replaced it: the claim word carries the loop's generation).
  void take_chunks(const Loop& loop) {
    const uint64_t tag = loop.gen & 0xffffffffu;
    for (;;) {
      uint64_t c = claim_.load(std::memory_order_acquire);
      if ((c >> 32) != tag || (int64_t)(c & 0xffffffffu) >= loop.chunks) return;
      if (!claim_.compare_exchange_weak(c, c + 1, std::memory_order_acq_rel)) continue;
      t_in_chunk = true;
      try {
        loop.fn(loop.ctx, (int64_t)(c & 0xffffffffu));
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu_);
        if (!error_) error_ = std::current_exception();
      }
      t_in_chunk = false;
      done_.fetch_add(1, std::memory_order_acq_rel);
    }
  }

  void work() {
    uint64_t seen = 0;
    for (;;) {
      // Spin a little for the next loop (the claim word's generation moves),
      // then sleep until one comes.
      for (int spin = 0, limit = worker_spin_limit();
           spin < limit && (claim_.load(std::memory_order_acquire) >> 32) == (seen & 0xffffffffu) &&
           !stop_.load(std::memory_order_relaxed);
           ++spin)
        GN_CPU_PAUSE();
      Loop loop;
      {
        std::unique_lock<std::mutex> lock(mu_);
        ++sleepers_;
        cv_.wait(lock, [&] { return stop_.load() || gen_ != seen; });
        --sleepers_;
        if (stop_.load()) return;
        loop = loop_;
        seen = loop.gen;
      }
      take_chunks(loop);
    }
  }

  std::vector<std::thread> workers_;
  std::mutex submit_;  // one loop at a time
  std::mutex mu_;      // loop_, gen_, sleepers_, error_
  std::condition_variable cv_;
  Loop loop_;
  uint64_t gen_ = 0;
  int sleepers_ = 0;
  std::atomic<bool> stop_{false};
  std::exception_ptr error_;
  std::atomic<uint64_t> claim_{0};  // generation (low 32 bits, high in the word) | next chunk
  std::atomic<int64_t> done_{0};
};

// The pool of this process. Allocated once and never destroyed: at exit the
// plugin's statics may go before the runtime that shuts the plugin down (and
// so releases the pool), and a sleeping worker needs no cleanup when the
// process ends.
struct PoolSlot {
  std::mutex mu;
  std::shared_ptr<Pool> pool;  // rebuilt when the thread count changes
};
PoolSlot*& slot_ptr() {
  static PoolSlot* s = nullptr;
  if (!s) s = new PoolSlot;
  return s;
}
std::atomic<int> g_users{0};  // runtimes that initialised the plugin and have not shut it down

// A forked child inherits the pool object but none of its threads (and maybe
// a lock held by one): it starts over with a new slot, and the old one is
// left alone, since destroying it would join threads that do not exist here.
void forget_pool_in_child() { slot_ptr() = new PoolSlot; }

std::shared_ptr<Pool> pool() {
  static const bool at_fork = [] {
    pthread_atfork(nullptr, nullptr, forget_pool_in_child);
    return true;
  }();
  (void)at_fork;
  const int n = num_threads();
  PoolSlot& s = *slot_ptr();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.pool || s.pool->size() != n) s.pool = std::make_shared<Pool>(n);
  return s.pool;
}

}  // namespace

void release_pool() {
  // The last runtime using the plugin frees the slot too: the library may be
  // unloaded next, and the slot would be lost with it.
  if (g_users.fetch_sub(1) > 1) {
    std::shared_ptr<Pool> p;
    {
      PoolSlot& s = *slot_ptr();
      std::lock_guard<std::mutex> lock(s.mu);
      p.swap(s.pool);
    }
    return;  // joined here, or by the last loop still holding it
  }
  PoolSlot* s = slot_ptr();
  slot_ptr() = nullptr;
  delete s;  // joins the workers
}

int available_cores() {
  static const int cores = [] {
    int n = 0;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) n = CPU_COUNT(&set);
    if (n <= 0) n = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (n <= 0) n = 1;
    const int quota = cgroup_cores();
    return quota > 0 ? std::min(n, quota) : n;
  }();
  return cores;
}

namespace {
int available_cores_cached() { return available_cores(); }
}  // namespace

int default_threads() {
  int v = env_threads("OMP_NUM_THREADS");
  if (v <= 0) v = env_threads("GENESIS_NUM_THREADS");
  return v > 0 ? std::min(v, available_cores()) : available_cores();
}

namespace {
std::atomic<int> g_default{0};  // default_threads() when the plugin was initialised
}

void init_threads(int explicit_count) {
  g_users.fetch_add(1);
  g_default.store(default_threads(), std::memory_order_relaxed);
  set_num_threads(explicit_count);
}

int num_threads() {
  const int n = g_explicit.load(std::memory_order_relaxed);
  if (n > 0) return n;
  const int d = g_default.load(std::memory_order_relaxed);
  return d > 0 ? d : available_cores();
}

void set_num_threads(int n) { g_explicit.store(n > 0 ? std::min(n, 4096) : 0, std::memory_order_relaxed); }

void run_chunks(int64_t chunks, void (*fn)(void*, int64_t), void* ctx) {
  if (chunks <= 0) return;
  if (chunks == 1 || t_in_chunk || num_threads() == 1 || chunks > 0xffffffffLL || !pool()->run(chunks, fn, ctx)) {
    for (int64_t c = 0; c < chunks; ++c) fn(ctx, c);
  }
}

}  // namespace gn::cpu

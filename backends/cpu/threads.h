// backends/cpu/threads.h - the cpu backend's threads: how many, and the pool
// that runs the parallel loops.
//
// How many: set_num_threads (the runtime option "num_threads", at load or
// later through gn_runtime_set_num_threads), else $OMP_NUM_THREADS, else
// $GENESIS_NUM_THREADS, else the cores this process may run on (its CPU
// affinity mask, lowered by a cgroup CPU quota). The environment's values are
// capped at that core count (a variable copied from a bigger machine must not
// oversubscribe a container); only set_num_threads goes above it.
//
// The pool: num_threads() - 1 worker threads (named "genesis-cpu") plus the
// calling thread. A
// parallel loop is cut into chunks that the threads claim one at a time, and
// the calling thread claims chunks too; a worker that has not woken up by the
// time the chunks are gone simply finds none. So a loop never waits for a
// thread that the OS has not scheduled (a busy machine), only for chunks
// already started. Workers sleep on a condition variable between loops after
// a short spin (passive waiting: no CPU burnt between ops), and oneDNN runs
// its primitives on one thread each (no OpenMP team: OpenMP workers spin
// between regions and wait for each other at barriers).
#pragma once

#include <cstdint>
#include <type_traits>

namespace gn::cpu {

// Threads the parallel loops use (>= 1).
int num_threads();
// Sets the thread count; n <= 0 restores the default (environment, then cores).
void set_num_threads(int n);
// The cores this process may run on: affinity mask, lowered by a cgroup CPU quota.
int available_cores();
// The default count: $OMP_NUM_THREADS, $GENESIS_NUM_THREADS (at most available_cores()), else available_cores().
int default_threads();
// At plugin init: reads the environment's default, then set_num_threads(explicit_count).
void init_threads(int explicit_count);

// Stops the pool's threads (plugin shutdown); the next parallel loop starts new ones.
void release_pool();

// Runs fn(ctx, c) for every chunk c in [0, chunks) on the pool; the calling
// thread takes part. Runs serially on the calling thread when the pool has one
// thread, is busy with another caller's loop, or when called from inside a
// chunk. The first exception a chunk throws is rethrown here once every
// started chunk has finished.
void run_chunks(int64_t chunks, void (*fn)(void* ctx, int64_t chunk), void* ctx);

// run_chunks over a callable: f(chunk).
template <class F>
inline void parallel_chunks(int64_t chunks, F&& f) {
  using Fn = std::remove_reference_t<F>;
  run_chunks(
      chunks, [](void* c, int64_t i) { (*static_cast<Fn*>(c))(i); }, const_cast<void*>(static_cast<const void*>(&f)));
}

}  // namespace gn::cpu

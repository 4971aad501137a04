// genesis/random.hpp - the RNG API: manual_seed, Generator, get/set_rng_state,
// ForkRng, and random creation functions that draw from a given Generator.
//
//   genesis::manual_seed(42);                       // every device
//   genesis::Generator g(12345);                    // a private stream
//   auto x = genesis::rand({100, 100}, g);          // draws from g
//   auto s = genesis::get_rng_state();              // CPU default generator
//   { genesis::ForkRng fork; genesis::manual_seed(999); ... }  // restored here
//   genesis::set_rng_state(s);
//
// Every generator is Philox: its whole state is (seed, offset).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "genesis/tensor.hpp"

namespace genesis {

// manual_seed(uint64_t) (every device's default generator) is declared in tensor.hpp.

/** The state of one Philox generator: seed and offset (plus the device it belongs to). */
struct RngState {
  Device device;        ///< the device whose default generator this is (CPU for a Generator)
  uint64_t seed = 0;    ///< Philox key
  uint64_t offset = 0;  ///< Philox counter offset
  /** Same seed and offset (device ignored). */
  bool operator==(const RngState& o) const { return seed == o.seed && offset == o.offset; }
  /** Different seed or offset. */
  bool operator!=(const RngState& o) const { return !(*this == o); }
};

/** A private random stream (torch.Generator); pass it to rand/randn/... to leave the defaults alone. */
class Generator {
 public:
  /** Torch's default seed for a fresh generator. */
  static constexpr uint64_t kDefaultSeed = 67280421310721ull;
  /** A generator seeded with seed (offset 0). */
  explicit Generator(uint64_t seed = kDefaultSeed);
  /** A copy with the same state (an independent stream from then on). */
  Generator(const Generator& o);
  /** Copies o's state. */
  Generator& operator=(const Generator& o);
  /** Moves the underlying generator. */
  Generator(Generator&& o) noexcept : g_(o.g_) { o.g_ = nullptr; }
  /** Moves the underlying generator. */
  Generator& operator=(Generator&& o) noexcept {
    std::swap(g_, o.g_);
    return *this;
  }
  ~Generator();

  /** Reseeds (offset back to 0); returns *this. */
  Generator& manual_seed(uint64_t seed);
  /** The seed. */
  uint64_t initial_seed() const;
  /** The Philox offset (advances as numbers are drawn). */
  uint64_t offset() const;
  /** The full state. */
  RngState get_state() const;
  /** Restores a state from get_state(). */
  void set_state(const RngState& s);
  /** The C generator (for gn_call_options.generator). */
  gn_generator* c() const { return g_; }

 private:
  gn_generator* g_ = nullptr;
};

/** Every device the runtime knows (each CPU and CUDA ordinal). */
std::vector<Device> all_devices();
/** State of a device's default generator. */
RngState get_rng_state(const Device& device = Device());
/** Restores a device's default generator (the state's own device). */
void set_rng_state(const RngState& state);
/** Restores a state onto another device's default generator. */
void set_rng_state(const RngState& state, const Device& device);
/** States of every device's default generator. */
std::vector<RngState> get_all_rng_states();
/** Restores the states from get_all_rng_states() (devices absent now are skipped). */
void set_all_rng_states(const std::vector<RngState>& states);
/** Seeds one device's default generator (offset 0). */
void manual_seed(uint64_t seed, const Device& device);

/** Saves the default generators of `devices` (all when empty) and restores them on exit (torch.random.fork_rng). */
class ForkRng {
 public:
  /** Saves the states of devices (all devices when empty); does nothing when !enabled. */
  explicit ForkRng(std::vector<Device> devices = {}, bool enabled = true);
  ~ForkRng();
  ForkRng(const ForkRng&) = delete;
  ForkRng& operator=(const ForkRng&) = delete;

 private:
  std::vector<RngState> saved_;
};

// ------------------------------------------- random creation with a Generator

/** Uniform [0, 1) drawn from gen. */
Tensor rand(Shape shape, Generator& gen, Options opts = {});
/** Standard normal drawn from gen. */
Tensor randn(Shape shape, Generator& gen, Options opts = {});
/** Uniform integers in [low, high) drawn from gen (int64 unless opts.dtype). */
Tensor randint(int64_t low, int64_t high, Shape shape, Generator& gen, Options opts = {});
/** 1 with probability p (elementwise, p's shape and dtype) else 0; gen null = device default. */
Tensor bernoulli(const Tensor& p, Generator* gen = nullptr);
/** 1 with probability p in x's shape and dtype; gen null = device default. */
Tensor bernoulli(const Tensor& like, double p, Generator* gen = nullptr);
/** Inverted dropout: zeroes elements with probability p, scales the rest by 1/(1-p); identity when !training. */
Tensor dropout(const Tensor& x, double p, bool training = true, Generator* gen = nullptr);
/** A random permutation of 0..n-1 (int64; argsort of uniform doubles); gen null = CPU default. */
Tensor randperm(int64_t n, Generator* gen = nullptr, Options opts = {});
/** randperm drawn from gen. */
inline Tensor randperm(int64_t n, Generator& gen, Options opts = {}) { return randperm(n, &gen, opts); }

// ---- host-side streams
// Choices made on the host (a sampled token, a shuffle seed, synthetic benchmark ids) use
// SplitMix64: tiny, fast and the same numbers on every machine.  Device tensors use Philox above.

/** SplitMix64's output function of x + the golden-ratio increment: a bijective 64-bit mix. */
uint64_t mix_seed(uint64_t x);
/** The seed of sub-stream `stream` (an epoch, a rank, a request) of a run seeded with `seed`. */
inline uint64_t derive_seed(uint64_t seed, uint64_t stream) { return mix_seed(seed ^ mix_seed(stream)); }

/** A deterministic host stream (SplitMix64): one seed, the same sequence everywhere. */
class HostRng {
 public:
  /** A stream starting at seed. */
  explicit HostRng(uint64_t seed) : state_(seed) {}
  /** The next 64 random bits. */
  uint64_t next_u64();
  /** A uniform double in [0, 1) with 53 random bits. */
  double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
  /** A uniform integer in [0, n) for n >= 1 (modulo draw: bias below 2^-40 for n < 2^24). */
  int64_t below(int64_t n) { return static_cast<int64_t>(next_u64() % static_cast<uint64_t>(n)); }

 private:
  uint64_t state_;
};

}  // namespace genesis

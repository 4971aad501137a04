// random.cpp - Generator, default-generator states, ForkRng, and random
// creation functions that draw from an explicit generator.
#include "genesis/random.hpp"

#include <utility>

#include "../internal.h"

namespace genesis {

// ---------------------------------------------------------------- Generator

Generator::Generator(uint64_t seed) { check(gn_generator_create(runtime(), seed, &g_), "Generator"); }

Generator::Generator(const Generator& o) : Generator(o.initial_seed()) { set_state(o.get_state()); }

Generator& Generator::operator=(const Generator& o) {
  if (this != &o) {
    if (!g_) check(gn_generator_create(runtime(), o.initial_seed(), &g_), "Generator");
    set_state(o.get_state());
  }
  return *this;
}

Generator::~Generator() { gn_generator_destroy(g_); }

Generator& Generator::manual_seed(uint64_t seed) {
  gn_generator_set_state(g_, seed, 0);
  return *this;
}

uint64_t Generator::initial_seed() const { return get_state().seed; }
uint64_t Generator::offset() const { return get_state().offset; }

RngState Generator::get_state() const {
  RngState s;
  if (!g_) throw Error(GN_ERR_INVALID_ARGUMENT, "[Generator] used after being moved from");
  gn_generator_get_state(g_, &s.seed, &s.offset);
  return s;
}

void Generator::set_state(const RngState& s) {
  if (!g_) throw Error(GN_ERR_INVALID_ARGUMENT, "[Generator] used after being moved from");
  gn_generator_set_state(g_, s.seed, s.offset);
}

// ------------------------------------------------------- default generators

std::vector<Device> all_devices() {
  gn_runtime* rt = runtime();
  std::vector<Device> out;
  const size_t n = gn_device_type_count(rt);
  for (size_t i = 0; i < n; ++i) {
    gn_device_type_record r{};
    r.struct_size = sizeof r;
    check(gn_device_type_get(rt, i, &r), "all_devices");
    for (int32_t k = 0; k < r.device_count; ++k) out.emplace_back(gn_device{r.id, k});
  }
  return out;
}

RngState get_rng_state(const Device& device) {
  RngState s;
  s.device = device;
  check(gn_rng_get_state(runtime(), device.c(), &s.seed, &s.offset), "get_rng_state");
  return s;
}

void set_rng_state(const RngState& state) { set_rng_state(state, state.device); }

void set_rng_state(const RngState& state, const Device& device) {
  check(gn_rng_set_state(runtime(), device.c(), state.seed, state.offset), "set_rng_state");
}

std::vector<RngState> get_all_rng_states() {
  std::vector<RngState> out;
  for (const Device& d : all_devices()) out.push_back(get_rng_state(d));
  return out;
}

void set_all_rng_states(const std::vector<RngState>& states) {
  const std::vector<Device> now = all_devices();
  for (const RngState& s : states) {
    bool present = false;
    for (const Device& d : now) present = present || d == s.device;
    if (present) set_rng_state(s);
  }
}

void manual_seed(uint64_t seed, const Device& device) {
  check(gn_rng_set_state(runtime(), device.c(), seed, 0), "manual_seed");
}

ForkRng::ForkRng(std::vector<Device> devices, bool enabled) {
  if (!enabled) return;
  if (devices.empty()) devices = all_devices();
  for (const Device& d : devices) saved_.push_back(get_rng_state(d));
}

ForkRng::~ForkRng() {
  for (const RngState& s : saved_) {
    gn_status* st = gn_rng_set_state(runtime(), s.device.c(), s.seed, s.offset);
    gn_status_free(st);  // a destructor must not throw
  }
}

// --------------------------------------------------------- random creation

namespace {

// Calls a one-output op drawing from gen (NULL = the device default).
Tensor call_gen(const gn_op* op, std::initializer_list<const Tensor*> in, std::initializer_list<gn_attr_value> attrs,
                Generator* gen) {
  std::vector<gn_tensor*> ins;
  for (const Tensor* t : in) ins.push_back(t->handle());
  gn_call_options o{};
  o.struct_size = sizeof o;
  o.generator = gen ? gen->c() : nullptr;
  gn_tensor* out = nullptr;
  check(gn_op_call_ex(runtime(), op, ins.data(), ins.size(), attrs.begin(), attrs.size(), &out, 1, &o), gn_op_name(op));
  return Tensor::adopt(out);
}

Tensor finish(Tensor t, const Options& o) {
  if (o.requires_grad) t.requires_grad_(true);
  return t;
}

int32_t dt(const Options& o, DType def) { return static_cast<int32_t>(o.dtype.value_or(def)); }

// rand and randn: samples of `shape` from gen, float32 unless opts give a dtype.
Tensor float_samples(const gn_op* op, const Shape& shape, Generator& gen, const Options& opts) {
  return finish(call_gen(op, {},
                         {gn_attr_ints(shape.data(), shape.size()), gn_attr_int(dt(opts, DType::f32)),
                          gn_attr_device(detail::device_of(opts).c())},
                         &gen),
                opts);
}

}  // namespace

Tensor rand(Shape shape, Generator& gen, Options opts) { return float_samples(GN_OP_HANDLE("rand"), shape, gen, opts); }

Tensor randn(Shape shape, Generator& gen, Options opts) {
  return float_samples(GN_OP_HANDLE("randn"), shape, gen, opts);
}

Tensor randint(int64_t low, int64_t high, Shape shape, Generator& gen, Options opts) {
  return finish(call_gen(GN_OP_HANDLE("randint"), {},
                         {gn_attr_int(low), gn_attr_int(high), gn_attr_ints(shape.data(), shape.size()),
                          gn_attr_int(dt(opts, DType::i64)), gn_attr_device(detail::device_of(opts).c())},
                         &gen),
                opts);
}

Tensor bernoulli(const Tensor& p, Generator* gen) {
  Tensor pd = p.detach();
  return call_gen(GN_OP_HANDLE("bernoulli"), {&pd}, {}, gen);
}

Tensor bernoulli(const Tensor& like, double p, Generator* gen) {
  Options o;
  o.dtype = is_floating(like.dtype()) ? like.dtype() : DType::f32;
  o.device = like.device();
  return bernoulli(full(like.shape(), p, o), gen);
}

Tensor dropout(const Tensor& x, double p, bool training, Generator* gen) {
  if (p < 0 || p > 1) throw Error(GN_ERR_INVALID_ARGUMENT, "[dropout] p must be in [0, 1], got " + std::to_string(p));
  if (!training || p == 0) return x;
  if (p == 1) return x * 0.0;
  // The mask (x's dtype) carries the 1/(1-p) scale: one recorded mul instead of two.
  // mask*scale is 0 or scale exactly, so x*(mask*scale) == (x*mask)*scale bit for bit.
  Tensor mask = bernoulli(x, 1 - p, gen);
  mask.mul_(Scalar(1.0 / (1 - p)));
  return x * mask;
}

Tensor randperm(int64_t n, Generator* gen, Options opts) {
  if (n < 0) throw Error(GN_ERR_INVALID_ARGUMENT, "[randperm] n must be >= 0, got " + std::to_string(n));
  Options u;
  u.dtype = DType::f64;  // 53-bit keys: ties (broken by index) are vanishingly rare
  u.device = detail::device_of(opts);
  Tensor keys = gen ? rand({n}, *gen, u) : rand({n}, u);
  Tensor idx = call_gen(GN_OP_HANDLE("argsort"), {&keys}, {gn_attr_int(0), gn_attr_int(0), gn_attr_int(1)}, nullptr);
  if (opts.dtype && *opts.dtype != DType::i64) idx = idx.to(*opts.dtype);
  return idx;
}

uint64_t mix_seed(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t HostRng::next_u64() {
  state_ += 0x9E3779B97F4A7C15ull;
  uint64_t z = state_;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace genesis

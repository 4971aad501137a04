// runtime.cpp - the process-wide runtime, errors, devices, dtypes, op calls.
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

#include "autograd/inplace.h"
#include "internal.h"

namespace genesis {

namespace {

// Owns the runtime; tensors still alive keep the C runtime alive past this.
struct RuntimeHolder {
  std::mutex mu;
  gn_runtime* rt = nullptr;
  std::unordered_map<std::string, const gn_op*> ops;
  ~RuntimeHolder() { gn_runtime_destroy(rt); }
};

RuntimeHolder& holder() {
  static RuntimeHolder h;
  return h;
}

void create(RuntimeHolder& h, const RuntimeOptions* o) {
  std::string threads;
  const char* key = "num_threads";
  const char* value = nullptr;
  gn_runtime_options c{};
  c.struct_size = sizeof c;
  if (o) {
    if (o->quiet) c.flags |= GN_RUNTIME_QUIET;
    if (o->no_default_paths) c.flags |= GN_RUNTIME_NO_DEFAULT_PATHS;
    c.plugin_path = o->plugin_path.empty() ? nullptr : o->plugin_path.c_str();
    c.plugins = o->plugins.empty() ? nullptr : o->plugins.c_str();
    c.backends = o->backends.empty() ? nullptr : o->backends.c_str();
    if (o->num_threads > 0) {
      threads = std::to_string(o->num_threads);
      c.n_options = 1;
      c.option_keys = &key;
      c.option_values = &value;
      value = threads.c_str();
    }
  } else {
    c.flags = GN_RUNTIME_QUIET;
  }
  check(gn_runtime_create(&c, &h.rt), "runtime");
}

}  // namespace

void init(const RuntimeOptions& options) {
  RuntimeHolder& h = holder();
  std::lock_guard<std::mutex> lock(h.mu);
  if (h.rt)
    throw Error(GN_ERR_INVALID_ARGUMENT, "[init] the runtime already exists: call init before any other Genesis call");
  create(h, &options);
}

gn_runtime* runtime() {
  RuntimeHolder& h = holder();
  if (gn_runtime* rt = h.rt) return rt;
  std::lock_guard<std::mutex> lock(h.mu);
  if (!h.rt) create(h, nullptr);
  return h.rt;
}

void manual_seed(uint64_t seed) { gn_rng_manual_seed(runtime(), seed); }

void set_num_threads(int n) { check(gn_runtime_set_num_threads(runtime(), n), "set_num_threads"); }

int get_num_threads() { return gn_runtime_num_threads(runtime()); }

const char* dtype_name(DType d) { return gn_dtype_name(static_cast<int32_t>(d)); }

std::optional<DType> dtype_from_name(std::string_view n) {
  static constexpr std::pair<std::string_view, DType> kNames[] = {
      {"float32", DType::f32},   {"float", DType::f32}, {"f32", DType::f32},     {"fp32", DType::f32},
      {"bfloat16", DType::bf16}, {"bf16", DType::bf16}, {"float16", DType::f16}, {"half", DType::f16},
      {"f16", DType::f16},       {"fp16", DType::f16},  {"float64", DType::f64}, {"double", DType::f64},
      {"f64", DType::f64},       {"fp64", DType::f64},  {"int8", DType::i8},     {"i8", DType::i8},
      {"uint8", DType::u8},      {"u8", DType::u8},     {"int32", DType::i32},   {"int", DType::i32},
      {"i32", DType::i32},       {"int64", DType::i64}, {"long", DType::i64},    {"i64", DType::i64},
      {"bool", DType::boolean}};
  for (const auto& [name, d] : kNames)
    if (name == n) return d;
  return std::nullopt;
}
bool is_floating(DType d) { return gn_dtype_is_float(static_cast<int32_t>(d)) != 0; }

Device::Device() {
  static const gn_device cpu = Device("cpu").c();  // parsed once: Device() is on hot paths
  d_ = cpu;
}

Device::Device(const char* spec) { check(gn_device_parse(runtime(), spec, &d_), "device"); }

std::string Device::str() const {
  char buf[64];
  gn_device_format(runtime(), d_, buf, sizeof buf);
  return buf;
}

std::string Device::type() const {
  const std::string s = str();
  return s.substr(0, s.find(':'));
}

bool cuda_available() { return gn_device_count(runtime(), "cuda") > 0; }

namespace detail {

const gn_op* find_op(const char* name) {
  RuntimeHolder& h = holder();
  gn_runtime* rt = runtime();
  std::lock_guard<std::mutex> lock(h.mu);
  auto it = h.ops.find(name);
  if (it != h.ops.end()) return it->second;
  const gn_op* op = nullptr;
  check(gn_op_find(rt, name, &op), name);
  h.ops.emplace(name, op);
  return op;
}

namespace {

// While a recording backward runs a rule: whether an op call's inputs require grad (its result
// must then be recorded, else the rule is first-order only; autograd/higher_order.cpp).
template <class It, class Get>
void note(const gn_op* op, It first, It last, Get get, gn_tensor* out0) {
  bool any = false;
  for (It it = first; it != last && !any; ++it) any = get(*it).requires_grad();
  autograd::detail::note_call(op, any, out0);
}
const Tensor& deref(const Tensor* t) { return *t; }
const Tensor& same(const Tensor& t) { return t; }

std::vector<Tensor> call_raw(const gn_op* op, gn_tensor* const* in, size_t n_in, const gn_attr_value* attrs,
                             size_t n_attrs, size_t n_out) {
  gn_tensor* out[8] = {};
  if (n_out > 8) throw Error(GN_ERR_INTERNAL, "too many outputs");
  check(gn_op_call(runtime(), op, in, n_in, attrs, n_attrs, out, n_out), gn_op_name(op));
  std::vector<Tensor> r;
  r.reserve(n_out);
  for (size_t i = 0; i < n_out; ++i) r.push_back(Tensor::adopt(out[i]));
  return r;
}

// The call overloads taking a vector of tensors, whatever holds their attributes.
std::vector<Tensor> call_tensors(const gn_op* op, const std::vector<Tensor>& in, const gn_attr_value* attrs,
                                 size_t n_attrs, size_t n_out) {
  std::vector<gn_tensor*> h;
  for (const Tensor& t : in) h.push_back(t.handle());
  std::vector<Tensor> r = call_raw(op, h.data(), h.size(), attrs, n_attrs, n_out);
  if (autograd::detail::t_track_calls) note(op, in.begin(), in.end(), same, r.empty() ? nullptr : r[0].handle());
  return r;
}

}  // namespace

std::vector<Tensor> call(const gn_op* op, std::initializer_list<const Tensor*> in,
                         std::initializer_list<gn_attr_value> attrs, size_t n_out) {
  gn_tensor* h[8];
  size_t n = 0;
  for (const Tensor* t : in) h[n++] = t->handle();
  std::vector<Tensor> r = call_raw(op, h, n, attrs.begin(), attrs.size(), n_out);
  if (autograd::detail::t_track_calls) note(op, in.begin(), in.end(), deref, r.empty() ? nullptr : r[0].handle());
  return r;
}

std::vector<Tensor> call(const gn_op* op, const std::vector<Tensor>& in, std::initializer_list<gn_attr_value> attrs,
                         size_t n_out) {
  return call_tensors(op, in, attrs.begin(), attrs.size(), n_out);
}

std::vector<Tensor> call(const gn_op* op, const std::vector<Tensor>& in, const std::vector<gn_attr_value>& attrs,
                         size_t n_out) {
  return call_tensors(op, in, attrs.data(), attrs.size(), n_out);
}

Tensor call1(const gn_op* op, std::initializer_list<const Tensor*> in, std::initializer_list<gn_attr_value> attrs) {
  // The hot path of every one-output op: no vector, one output slot on the stack.
  gn_tensor* h[8];
  size_t n = 0;
  for (const Tensor* t : in) h[n++] = t->handle();
  gn_tensor* out[1] = {nullptr};
  check(gn_op_call(runtime(), op, h, n, attrs.begin(), attrs.size(), out, 1), gn_op_name(op));
  if (autograd::detail::t_track_calls) note(op, in.begin(), in.end(), deref, out[0]);
  return Tensor::adopt(out[0]);
}

void call_into(const gn_op* op, std::initializer_list<const Tensor*> in, std::initializer_list<gn_attr_value> attrs,
               const Tensor& out) {
  gn_tensor* h[8];
  size_t n = 0;
  for (const Tensor* t : in) h[n++] = t->handle();
  gn_tensor* o[1] = {out.handle()};
  check(gn_op_call(runtime(), op, h, n, attrs.begin(), attrs.size(), o, 1), gn_op_name(op));
  if (autograd::detail::t_track_calls) note(op, in.begin(), in.end(), deref, o[0]);
}

void check_inplace(const Tensor& t, const char* op) { autograd::check_inplace(t, op); }

Device device_of(const Options& o) { return o.device ? *o.device : Device(); }

}  // namespace detail
}  // namespace genesis

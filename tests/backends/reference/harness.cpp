// tests/backends/reference/harness.cpp - the fake host and HostTensor.
#include "harness.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>

#include "genesis/sdk/convert.h"
#include "genesis/sdk/iter.h"

namespace reftest {
namespace {

// ----------------------------------------------------------------------------
// the fake host table

Registry* g_registry = nullptr;  // being filled during init

using test_host::status_new;

gn_status* register_device_type(void*, const gn_device_vtable* vt) {
  if (!vt || !vt->name) return status_new(GN_ERR_INVALID_ARGUMENT, "device type without a name");
  static std::vector<std::unique_ptr<std::string>> names;  // keep name strings alive
  names.push_back(std::make_unique<std::string>(vt->name));
  gn_device_vtable copy = *vt;
  copy.name = names.back()->c_str();
  if (!g_registry->devices.emplace(*names.back(), copy).second)
    return status_new(GN_ERR_ALREADY_EXISTS, ("device type " + *names.back() + " registered twice").c_str());
  return nullptr;
}

gn_status* register_op(void*, const gn_op_schema* schema) {
  g_registry->ops.push_back(schema && schema->name ? schema->name : "");
  return nullptr;
}

gn_status* register_kernel(void*, const gn_kernel_desc* k) {
  if (!k || !k->op || !k->fn) return status_new(GN_ERR_INVALID_ARGUMENT, "kernel without op or function");
  auto key = std::make_pair(std::string(k->op), k->dtype);
  if (!g_registry->kernels.emplace(key, *k).second)
    return status_new(GN_ERR_ALREADY_EXISTS,
                      ("kernel " + key.first + " / " + gn_dtype_name(k->dtype) + " registered twice").c_str());
  return nullptr;
}

gn_status* register_comm(void*, const gn_comm_vtable*) { return nullptr; }

const char* option_get(void*, const char*) { return nullptr; }

void log_msg(void*, int32_t level, const char* msg) {
  std::fprintf(stderr, "[reference plugin, level %d] %s\n", level, msg ? msg : "");
  if (g_registry) g_registry->logs.push_back(msg ? msg : "");
}

// The status functions of the fake host plus the registry's.
gn_host_api make_host() {
  gn_host_api h = test_host::status_host();
  h.register_device_type = register_device_type;
  h.register_op = register_op;
  h.register_kernel = register_kernel;
  h.register_comm = register_comm;
  h.option_get = option_get;
  h.log = log_msg;
  return h;
}

const gn_host_api g_host = make_host();

Registry* build_registry() {
  auto* r = new Registry();
  g_registry = r;
  r->info.struct_size = sizeof(r->info);
  r->init_status = gn_plugin_init(&g_host, &r->info);
  return r;
}

void* workspace(const gn_kernel_ctx* self, size_t bytes) {
  auto* list = (std::vector<void*>*)self->host_private;
  void* p = std::malloc(bytes ? bytes : 1);
  if (p) list->push_back(p);
  return p;
}

size_t esize(int32_t dtype) { return gn_dtype_size(dtype); }

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size());
  int64_t acc = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    s[d] = acc;
    acc *= shape[d];
  }
  return s;
}

int64_t product(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

// True when got matches want under expect_values' rule.
bool close(double got, double want, double tol) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::fabs(got - want) <= tol * (1.0 + std::fabs(want));
}

}  // namespace

const Registry& registry() {
  static Registry* r = build_registry();
  return *r;
}

const gn_kernel_desc* find_kernel(const std::string& op, int32_t dtype) {
  const Registry& r = registry();
  auto it = r.kernels.find({op, dtype});
  if (it == r.kernels.end()) it = r.kernels.find({op, GN_DTYPE_ANY});
  return it == r.kernels.end() ? nullptr : &it->second;
}

const gn_device_vtable* find_device(const std::string& name) {
  const Registry& r = registry();
  auto it = r.devices.find(name);
  return it == r.devices.end() ? nullptr : &it->second;
}

const gn_host_api* host() { return &g_host; }

// ----------------------------------------------------------------------------
// HostTensor

HostTensor HostTensor::zeros(const std::vector<int64_t>& shape, int32_t dtype) {
  HostTensor t;
  t.dtype = dtype;
  t.shape = shape;
  t.strides = contiguous_strides(shape);
  t.buf = std::make_shared<std::vector<uint8_t>>((size_t)product(shape) * esize(dtype) + 8, 0);
  return t;
}

HostTensor HostTensor::of(const std::vector<double>& vals, const std::vector<int64_t>& shape, int32_t dtype) {
  HostTensor t = zeros(shape, dtype);
  EXPECT_EQ((int64_t)vals.size(), t.numel()) << "HostTensor::of: value count does not match the shape";
  for (int64_t i = 0; i < t.numel() && i < (int64_t)vals.size(); ++i) gn::sdk::store(t.ptr(i), dtype, vals[(size_t)i]);
  return t;
}

HostTensor HostTensor::of_ints(const std::vector<int64_t>& vals, const std::vector<int64_t>& shape, int32_t dtype) {
  HostTensor t = zeros(shape, dtype);
  EXPECT_EQ((int64_t)vals.size(), t.numel()) << "HostTensor::of_ints: value count does not match the shape";
  for (int64_t i = 0; i < t.numel() && i < (int64_t)vals.size(); ++i)
    gn::sdk::store_int(t.ptr(i), dtype, vals[(size_t)i]);
  return t;
}

HostTensor HostTensor::scalar(double v, int32_t dtype) { return of({v}, {}, dtype); }

HostTensor HostTensor::strided_of(const std::vector<double>& vals, const std::vector<int64_t>& shape, int32_t dtype) {
  HostTensor t;
  t.dtype = dtype;
  t.shape = shape;
  t.strides.resize(shape.size());
  int64_t acc = 2;  // column-major, every element followed by a gap
  for (size_t d = 0; d < shape.size(); ++d) {
    t.strides[d] = acc;
    acc *= shape[d] > 0 ? shape[d] : 1;
  }
  t.offset = 3;
  t.buf = std::make_shared<std::vector<uint8_t>>((size_t)(acc + 8) * esize(dtype), 0xAB);
  EXPECT_EQ((int64_t)vals.size(), t.numel()) << "HostTensor::strided_of: value count does not match the shape";
  for (int64_t i = 0; i < t.numel() && i < (int64_t)vals.size(); ++i) gn::sdk::store(t.ptr(i), dtype, vals[(size_t)i]);
  return t;
}

int64_t HostTensor::numel() const { return product(shape); }

uint8_t* HostTensor::ptr(int64_t i) const {
  int64_t off = offset;
  for (size_t d = shape.size(); d-- > 0;) {
    off += (i % shape[d]) * strides[d];
    i /= shape[d];
  }
  return buf->data() + off * (int64_t)esize(dtype);
}

std::vector<double> HostTensor::values() const {
  std::vector<double> r((size_t)numel());
  for (int64_t i = 0; i < numel(); ++i) r[(size_t)i] = gn::sdk::load(ptr(i), dtype);
  return r;
}

std::vector<int64_t> HostTensor::ints() const {
  std::vector<int64_t> r((size_t)numel());
  for (int64_t i = 0; i < numel(); ++i) r[(size_t)i] = gn::sdk::load_int(ptr(i), dtype);
  return r;
}

double HostTensor::at(int64_t i) const { return gn::sdk::load(ptr(i), dtype); }

uint16_t HostTensor::bits16(int64_t i) const {
  uint16_t b;
  std::memcpy(&b, ptr(i), 2);
  return b;
}

HostTensor HostTensor::transposed(int32_t d0, int32_t d1) const {
  HostTensor t = *this;
  std::swap(t.shape[(size_t)d0], t.shape[(size_t)d1]);
  std::swap(t.strides[(size_t)d0], t.strides[(size_t)d1]);
  return t;
}

HostTensor HostTensor::expanded(const std::vector<int64_t>& to) const {
  HostTensor t = *this;
  t.shape = to;
  t.strides.assign(to.size(), 0);
  const size_t lead = to.size() - shape.size();
  for (size_t d = 0; d < shape.size(); ++d) {
    EXPECT_TRUE(shape[d] == to[d + lead] || shape[d] == 1) << "expanded: bad target shape";
    t.strides[d + lead] = shape[d] == 1 && to[d + lead] != 1 ? 0 : strides[d];
  }
  return t;
}

HostTensor HostTensor::sliced(int32_t dim, int64_t start, int64_t len, int64_t step) const {
  HostTensor t = *this;
  t.offset += start * strides[(size_t)dim];
  t.shape[(size_t)dim] = len;
  t.strides[(size_t)dim] *= step;
  return t;
}

HostTensor HostTensor::contiguous() const {
  HostTensor t = zeros(shape, dtype);
  for (int64_t i = 0; i < numel(); ++i) std::memcpy(t.ptr(i), ptr(i), esize(dtype));
  return t;
}

gn_tensor_view HostTensor::view() const {
  gn_tensor_view v{};
  v.data = buf->data();
  v.device = gn_device{0, 0};
  v.ndim = ndim();
  v.dtype = dtype;
  v.shape = shape.data();
  v.strides = strides.data();
  v.byte_offset = (uint64_t)(offset * (int64_t)esize(dtype));
  return v;
}

// ----------------------------------------------------------------------------
// run

Status run(const std::string& op, int32_t kernel_dtype, const std::vector<HostTensor>& in,
           const std::vector<HostTensor>& out, const std::vector<Attr>& attrs, uint64_t seed, uint64_t offset) {
  const gn_kernel_desc* k = find_kernel(op, kernel_dtype);
  if (!k)
    return Status(
        status_new(GN_ERR_NOT_FOUND, ("no reference kernel for " + op + " / " + gn_dtype_name(kernel_dtype)).c_str()));

  // GN_KERNEL_CONTIGUOUS: the dispatcher would pass dense copies.
  const bool dense = (k->flags & GN_KERNEL_CONTIGUOUS) != 0;
  std::vector<HostTensor> ins = in, outs = out;
  if (dense) {
    for (HostTensor& t : ins) t = t.contiguous();
    for (HostTensor& t : outs) t = t.contiguous();
  }
  std::vector<gn_tensor_view> vin, vout;
  for (const HostTensor& t : ins) vin.push_back(t.view());
  for (const HostTensor& t : outs) vout.push_back(t.view());

  std::vector<gn_attr_value> av(attrs.size());
  for (size_t i = 0; i < attrs.size(); ++i) {
    av[i].kind = attrs[i].kind;
    switch (attrs[i].kind) {
      case GN_ATTR_INT: av[i].u.i = attrs[i].i; break;
      case GN_ATTR_FLOAT: av[i].u.f = attrs[i].f; break;
      case GN_ATTR_INTS:
        av[i].u.ints.data = attrs[i].ints.data();
        av[i].u.ints.size = attrs[i].ints.size();
        break;
      case GN_ATTR_STRING: av[i].u.s = attrs[i].s.c_str(); break;
      case GN_ATTR_DEVICE: av[i].u.device = gn_device{0, 0}; break;
      default: break;
    }
  }

  std::vector<void*> scratch;
  const gn_device_vtable* dev = find_device(k->device_type ? k->device_type : "cpu");
  gn_kernel_ctx ctx{};
  ctx.struct_size = sizeof(ctx);
  ctx.host = &g_host;
  ctx.device = gn_device{0, 0};
  ctx.stream = nullptr;
  ctx.kernel_data = k->user_data;
  ctx.device_ctx = dev ? dev->ctx : nullptr;
  ctx.seed = seed;
  ctx.offset = offset;
  ctx.op_name = k->op;
  ctx.workspace = workspace;
  ctx.host_private = &scratch;

  gn_status* st = k->fn(&ctx, vin.data(), vin.size(), vout.data(), vout.size(), av.data(), av.size());
  for (void* p : scratch) std::free(p);
  if (dense) {
    for (size_t j = 0; j < out.size(); ++j)
      for (int64_t i = 0; i < out[j].numel(); ++i) std::memcpy(out[j].ptr(i), outs[j].ptr(i), esize(out[j].dtype));
    // In-place ops mutate inputs: copy those back too.
    for (size_t j = 0; j < in.size(); ++j)
      for (int64_t i = 0; i < in[j].numel(); ++i) std::memcpy(in[j].ptr(i), ins[j].ptr(i), esize(in[j].dtype));
  }
  return Status(st);
}

// ----------------------------------------------------------------------------
// comparisons

void expect_near_vec(const std::vector<double>& got, const std::vector<double>& want, double tol,
                     std::source_location loc) {
  ::testing::ScopedTrace trace(loc.file_name(), (int)loc.line(), "checked here");
  ASSERT_EQ(got.size(), want.size()) << "element count differs";
  int shown = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!close(got[i], want[i], tol)) {
      ADD_FAILURE() << "element " << i << ": got " << got[i] << ", want " << want[i] << " (tol " << tol << ")";
      if (++shown >= 8) return;
    }
  }
}

void expect_values(const HostTensor& t, const std::vector<double>& want, double tol, std::source_location loc) {
  expect_near_vec(t.values(), want, tol, loc);
}

void expect_ints(const HostTensor& t, const std::vector<int64_t>& want, std::source_location loc) {
  ::testing::ScopedTrace trace(loc.file_name(), (int)loc.line(), "checked here");
  std::vector<int64_t> got = t.ints();
  ASSERT_EQ(got.size(), want.size()) << "element count differs";
  int shown = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i]) {
      ADD_FAILURE() << "element " << i << ": got " << got[i] << ", want " << want[i];
      if (++shown >= 8) return;
    }
  }
}

double round_to(double v, int32_t dtype) {
  uint8_t tmp[8];
  gn::sdk::store(tmp, dtype, v);
  return gn::sdk::load(tmp, dtype);
}

}  // namespace reftest

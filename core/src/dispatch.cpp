// core/src/dispatch.cpp - gn_op_call: validate, fill attributes, infer,
// cast, allocate outputs, choose a kernel (falling back on UNSUPPORTED), run,
// profile.  This is the hot path: no heap allocation for small calls beyond
// the output tensors themselves, no string work unless something fails.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "builtin.h"
#include "runtime.h"

namespace genesis::core {
namespace {

// A vector with inline storage for the common small case.  Only the n
// elements in use are zeroed (zeroing the whole inline capacity of every
// vector of a call was a quarter of a tiny op's core time), and data() is a
// stored pointer, not a branch.  Trivial element types only; not copyable
// (the pointer may point into the object itself).
template <class T, size_t N>
class SmallVec {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_default_constructible_v<T>);

 public:
  explicit SmallVec(size_t n) : n_(n) {
    if (n > N) {
      heap_.resize(n);
      p_ = heap_.data();
    } else {
      p_ = inline_;
      std::memset(static_cast<void*>(inline_), 0, n * sizeof(T));
    }
  }
  SmallVec(const SmallVec&) = delete;
  SmallVec& operator=(const SmallVec&) = delete;
  T* data() { return p_; }
  T& operator[](size_t i) { return p_[i]; }
  size_t size() const { return n_; }

 private:
  size_t n_;
  T* p_;
  T inline_[N];
  std::vector<T> heap_;
};

// Tensors created during one call, released when it ends.
struct Holder {
  SmallVec<gn_tensor*, 16> items;
  size_t n = 0;
  explicit Holder(size_t cap) : items(cap) {}
  gn_tensor* keep(gn_tensor* t) {
    items[n++] = t;
    return t;
  }
  ~Holder() {
    for (size_t i = 0; i < n; ++i) tensor_release(items[i]);
  }
};

// Per-call private state reachable from gn_kernel_ctx.host_private.
struct CallState {
  gn_runtime* rt;
  gn_device device;
  void* stream;
  std::vector<void*> workspaces;
};

void* kernel_workspace(const gn_kernel_ctx* ctx, size_t bytes) {
  auto* cs = static_cast<CallState*>(ctx->host_private);
  const DeviceType& dt = cs->rt->device_types[cs->device.type];
  void* p = nullptr;
  gn_status* st = dt.vt->alloc(dt.vt->ctx, cs->device.index, bytes ? bytes : 1, cs->stream, &p);
  if (st) {
    delete st;
    return nullptr;
  }
  cs->workspaces.push_back(p);
  return p;
}

const char* kind_name(int32_t k) {
  switch (k) {
    case GN_ATTR_INT: return "int";
    case GN_ATTR_FLOAT: return "float";
    case GN_ATTR_INTS: return "int list";
    case GN_ATTR_STRING: return "string";
    case GN_ATTR_DEVICE: return "device";
    default: return "unknown";
  }
}

[[noreturn]] void op_fail(const gn_op* op, int32_t code, const std::string& msg) {
  fail(code, "[" + op->name + "] " + msg);
}

// Positional attributes completed with defaults and kind-checked.
void fill_attrs(const gn_op* op, const gn_attr_value* given, size_t n_given, gn_attr_value* full) {
  const size_t n = op->attrs.size();
  if (n_given && !given) op_fail(op, GN_ERR_INVALID_ARGUMENT, "attrs is NULL with n_attrs " + std::to_string(n_given));
  if (n_given > n)
    op_fail(op, GN_ERR_INVALID_ARGUMENT,
            "takes " + std::to_string(n) + " attribute(s), got " + std::to_string(n_given));
  for (size_t i = 0; i < n; ++i) {
    const gn_attr_spec& spec = op->attrs[i];
    if (i < n_given) {
      gn_attr_value v = given[i];
      if (v.kind != spec.kind) {
        if (spec.kind == GN_ATTR_FLOAT && v.kind == GN_ATTR_INT) {
          v.kind = GN_ATTR_FLOAT;
          v.u.f = (double)given[i].u.i;
        } else if (spec.kind == GN_ATTR_INTS && v.kind == GN_ATTR_INT) {
          op_fail(op, GN_ERR_INVALID_ARGUMENT,
                  std::string("attribute '") + spec.name + "' expects an int list, got an int (pass a list)");
        } else {
          op_fail(op, GN_ERR_INVALID_ARGUMENT,
                  std::string("attribute '") + spec.name + "' expects " + kind_name(spec.kind) + ", got " +
                      kind_name(v.kind));
        }
      }
      if (v.kind == GN_ATTR_INTS && v.u.ints.size && !v.u.ints.data)
        op_fail(op, GN_ERR_INVALID_ARGUMENT, std::string("attribute '") + spec.name + "' has a NULL list");
      if (v.kind == GN_ATTR_STRING && !v.u.s)
        op_fail(op, GN_ERR_INVALID_ARGUMENT, std::string("attribute '") + spec.name + "' is a NULL string");
      full[i] = v;
    } else if (spec.has_default) {
      full[i] = spec.default_value;
    } else {
      op_fail(op, GN_ERR_INVALID_ARGUMENT,
              std::string("missing required attribute '") + spec.name + "' (position " + std::to_string(i) + ")");
    }
  }
}

std::string dtype_list(const gn_runtime* rt, const gn_op* op, int device_type) {
  std::string s;
  for (int d = 0; d < GN_DTYPE_COUNT; ++d) {
    size_t idx = (size_t)device_type * GN_DTYPE_COUNT + d;
    if (idx >= op->table.size() || op->table[idx].empty()) continue;
    if (!s.empty()) s += ' ';
    s += gn_dtype_name(d);
  }
  (void)rt;
  return s.empty() ? "none" : s;
}

bool same_device(gn_device a, gn_device b) { return a.type == b.type && a.index == b.index; }

// Inputs' shapes for the profiler.
std::string shapes_of(gn_tensor* const* in, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    if (i) s += ", ";
    s += shape_string(in[i]->ndim, in[i]->shape);
  }
  return s;
}

// split: views of x along dim with the sizes inference chose.
void run_split(gn_runtime* rt, const gn_op* op, gn_tensor* x, const gn_attr_value* attrs, const gn_infer_result& res,
               gn_tensor** out) {
  (void)rt;
  int64_t dim = attrs[1].u.i;
  if (dim < 0) dim += x->ndim;
  if (dim < 0 || dim >= x->ndim) op_fail(op, GN_ERR_INDEX, "dim out of range");
  int64_t start = 0;
  for (size_t k = 0; k < res.n_out; ++k) {
    int64_t len = res.out[k].shape[dim];
    gn_tensor* v = nullptr;
    throw_if(gn_tensor_slice(x, dim, start, start + len, 1, &v));
    out[k] = v;
    start += len;
  }
}

// ---- the stages of op_call, in call order

void check_arity(const gn_op* op, size_t n_in, gn_tensor** out, size_t n_out) {
  const gn_op_schema& sc = op->schema;
  if ((int)n_in < sc.min_inputs || (sc.max_inputs >= 0 && (int)n_in > sc.max_inputs)) {
    std::string want = sc.max_inputs < 0 ? "at least " + std::to_string(sc.min_inputs)
                       : sc.min_inputs == sc.max_inputs
                           ? std::to_string(sc.min_inputs)
                           : std::to_string(sc.min_inputs) + " to " + std::to_string(sc.max_inputs);
    op_fail(op, GN_ERR_INVALID_ARGUMENT, "expects " + want + " input(s), got " + std::to_string(n_in));
  }
  if (n_out && !out) op_fail(op, GN_ERR_INVALID_ARGUMENT, "outputs array is NULL");
}

// The device the call runs on: that of the first non-scalar input (all inputs on one device;
// 0-d tensors on another device are moved, as PyTorch lets CPU scalars join), or the device
// attribute of a creation op.  Fills in[] with the inputs to use.
gn_device resolve_device(gn_runtime* rt, const gn_op* op, gn_tensor* const* in_given, size_t n_in,
                         const gn_attr_value* full, gn_tensor** in, Holder& holder) {
  gn_device dev{-1, 0};
  for (size_t i = 0; i < n_in; ++i) {
    if (!in_given[i]) op_fail(op, GN_ERR_INVALID_ARGUMENT, "input " + std::to_string(i) + " is NULL");
    check_live(in_given[i], kTensorMagic, op->name.c_str(), "input tensor");
    if (in_given[i]->storage->rt != rt)
      op_fail(op, GN_ERR_INVALID_ARGUMENT, "input " + std::to_string(i) + " belongs to another runtime");
    in[i] = in_given[i];
    if (dev.type < 0 && in[i]->ndim > 0) dev = in[i]->storage->device;
  }
  if (dev.type < 0 && n_in) dev = in[0]->storage->device;
  if (op->schema.flags & GN_OP_NEEDS_DEVICE) {
    if (op->device_attr < 0) op_fail(op, GN_ERR_INTERNAL, "schema needs a device attribute");
    dev = full[op->device_attr].u.device;
    if (dev.type < 0) dev = default_device(rt);
  }
  if (dev.type < 0) dev = default_device(rt);
  for (size_t i = 0; i < n_in; ++i) {
    gn_device d = in[i]->storage->device;
    if (same_device(d, dev)) continue;
    if (in[i]->ndim == 0) {
      gn_tensor* moved = nullptr;
      throw_if(gn_tensor_to_device(in[i], dev, &moved));
      moved->flags = in[i]->flags;
      in[i] = holder.keep(moved);
      continue;
    }
    op_fail(op, GN_ERR_DEVICE,
            "expected all tensors on the same device, got " + device_str(rt, dev) + " (input 0) and " +
                device_str(rt, d) + " (input " + std::to_string(i) + ")");
  }
  return dev;
}

// Runs the schema's inference: output metas, the dtype each input is cast to (in_dtypes) and the
// kernel dtype, checked against the room the call has (n_out).
void infer_outputs(const gn_op* op, gn_tensor* const* in, size_t n_in, const gn_attr_value* full, size_t n_out,
                   gn_tensor_meta* out_meta, size_t cap, int32_t* in_dtypes, gn_infer_result& res) {
  const gn_op_schema& sc = op->schema;
  SmallVec<gn_tensor_meta, 4> meta(n_in);
  for (size_t i = 0; i < n_in; ++i) {
    gn_tensor_meta& m = meta[i];
    m.dtype = in[i]->dtype;
    m.ndim = in[i]->ndim;
    std::memcpy(m.shape, in[i]->shape, sizeof(int64_t) * (size_t)in[i]->ndim);
    m.flags = in[i]->flags;
    in_dtypes[i] = in[i]->dtype;
  }
  res.struct_size = sizeof(res);
  res.n_out = cap;
  res.out = out_meta;
  res.in_dtypes = in_dtypes;
  res.kernel_dtype = n_in ? in[0]->dtype : -1;
  const int32_t preset_kernel_dtype = res.kernel_dtype;
  gn_infer_ctx ictx{sizeof(gn_infer_ctx), &host_api_template(), op->name.c_str(), sc.user_data};
  if (gn_status* st = sc.infer(&ictx, meta.data(), n_in, full, op->attrs.size(), &res)) {
    if (st->msg.empty() || st->msg[0] != '[') st->msg = "[" + op->name + "] " + st->msg;
    throw_if(st);
  }
  if (res.n_out > cap) op_fail(op, GN_ERR_INTERNAL, "inference produced more outputs than it had room for");
  if (n_out < res.n_out)
    op_fail(op, GN_ERR_INVALID_ARGUMENT,
            "produces " + std::to_string(res.n_out) + " output(s), the call has room for " + std::to_string(n_out));
  // As op.h promises: the preset follows input 0's cast unless inference chose.
  if (n_in && res.kernel_dtype == preset_kernel_dtype && in_dtypes[0] != in[0]->dtype) res.kernel_dtype = in_dtypes[0];
  if (res.kernel_dtype < 0 && res.n_out) res.kernel_dtype = out_meta[0].dtype;
}

// Outputs the kernel writes: preallocated ones (out[k] != NULL) are checked against the inferred
// meta (copy_ only needs x to broadcast to them), the others are allocated (fresh[k]).
void prepare_outputs(gn_runtime* rt, const gn_op* op, gn_device dev, gn_tensor* in0, const gn_infer_result& res,
                     gn_tensor* const* out, gn_tensor** outs, char* fresh) {
  const bool is_copy = op == rt->op_copy;
  for (size_t k = 0; k < res.n_out; ++k) {
    const gn_tensor_meta& m = res.out[k];
    gn_tensor* given = out[k];
    if (!given) {
      outs[k] = tensor_empty(rt, m.ndim, m.shape, m.dtype, dev, op->name.c_str());
      fresh[k] = true;
      continue;
    }
    if (given->storage->rt != rt || !same_device(given->storage->device, dev))
      op_fail(op, GN_ERR_DEVICE,
              "output " + std::to_string(k) + " is on " + device_str(rt, given->storage->device) + ", the op runs on " +
                  device_str(rt, dev));
    if (is_copy) {
      gn_tensor* probe = nullptr;
      if (gn_status* st = gn_tensor_expand(in0, given->shape, given->ndim, &probe)) {
        delete st;
        op_fail(
            op, GN_ERR_SHAPE,
            "cannot copy " + shape_string(in0->ndim, in0->shape) + " into " + shape_string(given->ndim, given->shape));
      }
      tensor_release(probe);
    } else if (given->dtype != m.dtype || given->ndim != m.ndim ||
               !std::equal(m.shape, m.shape + m.ndim, given->shape)) {
      op_fail(op, GN_ERR_SHAPE,
              "output " + std::to_string(k) + " is " + shape_string(given->ndim, given->shape) + " " +
                  gn_dtype_name(given->dtype) + ", expected " + shape_string(m.ndim, m.shape) + " " +
                  gn_dtype_name(m.dtype));
    }
    outs[k] = given;
    fresh[k] = false;
  }
}

// A random op draws numel(outputs) Philox counters (rounded up to a block of 4) from the call's
// generator or the device's default one: returns (seed, first offset).
std::pair<uint64_t, uint64_t> draw_counters(gn_runtime* rt, gn_device dev, gn_tensor* const* outs, size_t n_out,
                                            const gn_call_options* options) {
  int64_t numel = 0;
  for (size_t k = 0; k < n_out; ++k) numel += tensor_numel(outs[k]);
  const uint64_t advance = ((uint64_t)numel + 3) / 4 * 4;
  if (options && options->struct_size >= GN_STRUCT_END(gn_call_options, generator) && options->generator)
    return {options->generator->seed.load(), options->generator->offset.fetch_add(advance)};
  DeviceState& ds = device_state(rt, dev);
  return {ds.seed.load(), ds.offset.fetch_add(advance)};
}

// Runs the first candidate kernel that accepts the call (GN_ERR_UNSUPPORTED passes to the next),
// giving kernels that ask for it contiguous inputs and outputs and copying results back.  Returns
// the failing status of the last kernel tried, or NULL.
gn_status* run_kernels(gn_runtime* rt, const gn_op* op, const DeviceType& dt, gn_device dev,
                       const std::vector<uint16_t>& cands, gn_tensor* const* in, size_t n_in, gn_tensor* const* outs,
                       size_t n_out, const gn_attr_value* full, std::pair<uint64_t, uint64_t> rng, Holder& holder) {
  CallState cs{rt, dev, current_stream(rt, dev), {}};
  gn_kernel_ctx kctx{};
  kctx.struct_size = sizeof(kctx);
  kctx.host = &host_api_template();
  kctx.device = dev;
  kctx.stream = cs.stream;
  kctx.device_ctx = dt.vt->ctx;
  kctx.seed = rng.first;
  kctx.offset = rng.second;
  kctx.op_name = op->name.c_str();
  kctx.workspace = kernel_workspace;
  kctx.host_private = &cs;
  SmallVec<gn_tensor_view, 8> in_views(n_in);
  SmallVec<gn_tensor_view, 4> out_views(n_out);
  gn_status* last = nullptr;
  for (size_t ci = 0; ci < cands.size(); ++ci) {
    const Kernel& k = op->kernels[cands[ci]];
    SmallVec<gn_tensor*, 8> kin(n_in);
    SmallVec<gn_tensor*, 4> kout(n_out);
    const bool contig = k.flags & GN_KERNEL_CONTIGUOUS;
    for (size_t i = 0; i < n_in; ++i) {
      kin[i] = in[i];
      if (contig && !tensor_is_contiguous(in[i])) kin[i] = holder.keep(make_contiguous(in[i]));
      tensor_view(kin[i], &in_views[i]);
    }
    for (size_t j = 0; j < n_out; ++j) {
      kout[j] = outs[j];
      if (contig && !tensor_is_contiguous(outs[j]))
        kout[j] = holder.keep(tensor_empty(rt, outs[j]->ndim, outs[j]->shape, outs[j]->dtype, dev));
      tensor_view(kout[j], &out_views[j]);
    }
    kctx.kernel_data = k.user_data;
    delete last;
    last = k.fn(&kctx, in_views.data(), n_in, out_views.data(), n_out, full, op->attrs.size());
    for (void* w : cs.workspaces) delete dt.vt->free(dt.vt->ctx, dev.index, w, cs.stream);
    cs.workspaces.clear();
    if (last && last->code == GN_ERR_UNSUPPORTED && ci + 1 < cands.size()) continue;
    if (last) break;
    // Results computed into contiguous temporaries go back where they belong.
    for (size_t j = 0; j < n_out; ++j)
      if (kout[j] != outs[j]) {
        gn_tensor* dst[1] = {outs[j]};
        op_call(rt, rt->op_copy, &kout[j], 1, nullptr, 0, dst, 1, nullptr);
      }
    if (contig && (op->schema.flags & GN_OP_INPLACE))
      for (size_t i = 0; i < n_in; ++i)
        if (kin[i] != in[i]) {
          gn_tensor* dst[1] = {in[i]};
          op_call(rt, rt->op_copy, &kin[i], 1, nullptr, 0, dst, 1, nullptr);
        }
    break;
  }
  return last;
}

}  // namespace

void op_call(gn_runtime* rt, const gn_op* op, gn_tensor* const* in_given, size_t n_in, const gn_attr_value* attrs,
             size_t n_attrs, gn_tensor** out, size_t n_out, const gn_call_options* options) {
  const int64_t t0 = rt->profiler.enabled() ? Profiler::now_ns() : 0;
  const gn_op_schema& sc = op->schema;
  check_arity(op, n_in, out, n_out);
  SmallVec<gn_attr_value, 8> full(op->attrs.size());
  fill_attrs(op, attrs, n_attrs, full.data());

  Holder holder(n_in * 3 + 4);  // temporaries (moved scalars, casts, contiguous copies) released on return
  SmallVec<gn_tensor*, 8> in(n_in);
  const gn_device dev = resolve_device(rt, op, in_given, n_in, full.data(), in.data(), holder);
  const DeviceType& dt = device_type_of(rt, dev, op->name.c_str());

  const size_t cap = sc.max_outputs >= 0 ? (size_t)sc.max_outputs : std::max<size_t>(n_out, 1);
  SmallVec<gn_tensor_meta, 4> out_meta(cap);
  SmallVec<int32_t, 8> in_dtypes(n_in);
  gn_infer_result res{};
  infer_outputs(op, in.data(), n_in, full.data(), n_out, out_meta.data(), cap, in_dtypes.data(), res);
  if (sc.flags & GN_OP_VIEW) {  // core-implemented (split)
    SmallVec<gn_tensor*, 8> views(res.n_out);
    run_split(rt, op, in[0], full.data(), res, views.data());
    for (size_t k = 0; k < res.n_out; ++k) out[k] = views[k];
    return;
  }
  for (size_t i = 0; i < n_in; ++i)  // casts requested by inference
    if (in_dtypes[i] != in[i]->dtype) in[i] = holder.keep(cast_to(in[i], in_dtypes[i]));

  if (res.kernel_dtype < 0 || res.kernel_dtype >= GN_DTYPE_COUNT)
    op_fail(op, GN_ERR_INTERNAL, "inference chose an invalid kernel dtype");
  const size_t slot = (size_t)dev.type * GN_DTYPE_COUNT + (size_t)res.kernel_dtype;
  static const std::vector<uint16_t> kNone;
  const std::vector<uint16_t>& cands = slot < op->table.size() ? op->table[slot] : kNone;
  if (cands.empty())
    op_fail(op, GN_ERR_UNSUPPORTED,
            std::string("no kernel for device type '") + dt.name + "' and dtype " + gn_dtype_name(res.kernel_dtype) +
                " (kernels here for: " + dtype_list(rt, op, dev.type) + ")");

  SmallVec<gn_tensor*, 4> outs(res.n_out);
  SmallVec<char, 4> fresh(res.n_out);
  struct OutGuard {  // outputs allocated here are released if anything below throws
    SmallVec<gn_tensor*, 4>& t;
    SmallVec<char, 4>& f;
    bool armed = true;
    ~OutGuard() {
      if (armed)
        for (size_t k = 0; k < t.size(); ++k)
          if (f[k] && t[k]) tensor_release(t[k]);
    }
  } out_guard{outs, fresh};
  prepare_outputs(rt, op, dev, n_in ? in[0] : nullptr, res, out, outs.data(), fresh.data());
  const auto rng = sc.flags & GN_OP_RANDOM ? draw_counters(rt, dev, outs.data(), res.n_out, options)
                                           : std::pair<uint64_t, uint64_t>{0, 0};
  if (gn_status* last =
          run_kernels(rt, op, dt, dev, cands, in.data(), n_in, outs.data(), res.n_out, full.data(), rng, holder)) {
    if (last->msg.empty() || last->msg[0] != '[') last->msg = "[" + op->name + "] " + last->msg;
    throw_if(last);
  }
  out_guard.armed = false;
  for (size_t k = 0; k < res.n_out; ++k) out[k] = outs[k];
  if (t0) rt->profiler.record({op->name, device_str(rt, dev), shapes_of(in_given, n_in), t0, Profiler::now_ns() - t0});
}

gn_tensor* make_contiguous(gn_tensor* t) {
  if (tensor_is_contiguous(t)) {
    t->refs.fetch_add(1, std::memory_order_relaxed);
    return t;
  }
  gn_runtime* rt = t->storage->rt;
  gn_tensor* out[1] = {nullptr};
  op_call(rt, rt->op_copy, &t, 1, nullptr, 0, out, 1, nullptr);
  return out[0];
}

gn_tensor* cast_to(gn_tensor* t, int32_t dtype) {
  gn_runtime* rt = t->storage->rt;
  gn_attr_value a = gn_attr_int(dtype);
  gn_tensor* out[1] = {nullptr};
  op_call(rt, rt->op_cast, &t, 1, &a, 1, out, 1, nullptr);
  return out[0];
}

}  // namespace genesis::core

using namespace genesis::core;

extern "C" {

gn_status* gn_op_find(gn_runtime* rt, const char* name, const gn_op** out) {
  return guarded([&] {
    require_non_null("gn_op_find", {{"rt", rt}, {"name", name}, {"out", out}});
    auto it = rt->op_by_name.find(name);
    if (it == rt->op_by_name.end()) fail(GN_ERR_NOT_FOUND, std::string("unknown op '") + name + "'");
    *out = rt->ops[it->second].get();
  });
}

gn_status* gn_op_call(gn_runtime* rt, const gn_op* op, gn_tensor* const* inputs, size_t n_in,
                      const gn_attr_value* attrs, size_t n_attrs, gn_tensor** outputs, size_t n_out) {
  return guarded([&] {
    require_non_null("gn_op_call", {{"rt", rt}, {"op", op}});
    if (n_in && !inputs) fail(GN_ERR_INVALID_ARGUMENT, "[" + op->name + "] inputs array is NULL");
    op_call(rt, op, inputs, n_in, attrs, n_attrs, outputs, n_out, nullptr);
  });
}

gn_status* gn_op_call_ex(gn_runtime* rt, const gn_op* op, gn_tensor* const* inputs, size_t n_in,
                         const gn_attr_value* attrs, size_t n_attrs, gn_tensor** outputs, size_t n_out,
                         const gn_call_options* options) {
  return guarded([&] {
    require_non_null("gn_op_call_ex", {{"rt", rt}, {"op", op}});
    if (n_in && !inputs) fail(GN_ERR_INVALID_ARGUMENT, "[" + op->name + "] inputs array is NULL");
    op_call(rt, op, inputs, n_in, attrs, n_attrs, outputs, n_out, options);
  });
}

gn_status* gn_op_output_count(gn_runtime* rt, const gn_op* op, gn_tensor* const* inputs, size_t n_in,
                              const gn_attr_value* attrs, size_t n_attrs, size_t* n_out) {
  return guarded([&] {
    require_non_null("gn_op_output_count", {{"rt", rt}, {"op", op}, {"n_out", n_out}});
    if (n_in && !inputs) fail(GN_ERR_INVALID_ARGUMENT, "[" + op->name + "] inputs array is NULL");
    if (n_attrs && !attrs)
      fail(GN_ERR_INVALID_ARGUMENT, "[" + op->name + "] attrs is NULL with n_attrs " + std::to_string(n_attrs));
    const gn_op_schema& sc = op->schema;
    if (sc.max_outputs >= 0) {
      *n_out = (size_t)sc.max_outputs;
      return;
    }
    std::vector<gn_attr_value> full(op->attrs.size());
    fill_attrs(op, attrs, n_attrs, full.data());
    std::vector<gn_tensor_meta> meta(n_in);
    std::vector<int32_t> dts(n_in);
    for (size_t i = 0; i < n_in; ++i) {
      if (!inputs[i]) fail(GN_ERR_INVALID_ARGUMENT, "[" + op->name + "] input is NULL");
      meta[i].dtype = dts[i] = inputs[i]->dtype;
      meta[i].ndim = inputs[i]->ndim;
      std::memcpy(meta[i].shape, inputs[i]->shape, sizeof(int64_t) * (size_t)inputs[i]->ndim);
      meta[i].flags = inputs[i]->flags;
    }
    std::vector<gn_tensor_meta> outs(4096);
    gn_infer_result res{sizeof(res), outs.size(), outs.data(), dts.data(), -1};
    gn_infer_ctx ictx{sizeof(gn_infer_ctx), &host_api_template(), op->name.c_str(), sc.user_data};
    throw_if(sc.infer(&ictx, meta.data(), n_in, full.data(), full.size(), &res));
    *n_out = res.n_out;
  });
}

size_t gn_op_count(const gn_runtime* rt) { return rt ? rt->ops.size() : 0; }
const gn_op* gn_op_at(const gn_runtime* rt, size_t i) { return rt && i < rt->ops.size() ? rt->ops[i].get() : nullptr; }
const char* gn_op_name(const gn_op* op) { return op ? op->name.c_str() : ""; }
const gn_op_schema* gn_op_get_schema(const gn_op* op) { return op ? &op->schema : nullptr; }
const char* gn_op_origin(const gn_op* op) { return op ? op->origin.c_str() : ""; }
size_t gn_op_kernel_count(const gn_op* op) { return op ? op->kernels.size() : 0; }

}  // extern "C"

extern "C" gn_status* gn_op_kernel_get(const gn_op* op, size_t i, gn_kernel_record* out) {
  return guarded([&] {
    require_non_null("gn_op_kernel_get", {{"op", op}, {"out", out}});
    if (i >= op->kernels.size())
      fail(GN_ERR_INDEX, "gn_op_kernel_get: index " + std::to_string(i) + " is out of range for " +
                             std::to_string(op->kernels.size()) + " kernel(s) of " + op->name);
    const Kernel& k = op->kernels[i];
    gn_kernel_record r{};
    r.struct_size = sizeof(r);
    r.backend = op->rt->plugins[k.plugin].name.c_str();
    r.device_type = op->rt->device_types[k.device_type].name.c_str();
    r.dtype = k.dtype;
    r.flags = k.flags;
    std::memcpy(out, &r, std::min(out->struct_size ? out->struct_size : sizeof(r), sizeof(r)));
  });
}

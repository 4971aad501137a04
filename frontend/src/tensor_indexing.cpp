// tensor_indexing.cpp - indexing, masking, sorting and scatter ops with autograd:
// gather, index_select, scatter, scatter_add, index_add, masked_fill, triu,
// tril, topk, sort, argsort, split/chunk, one_hot, bmm, nonzero, masked_select
// and x.index({...}) with bool masks.  Their gradient rules are in
// autograd/rules.cpp with the others.
#include <algorithm>
#include <string>

#include "autograd/inplace.h"
#include "autograd/rules.h"
#include "internal.h"

namespace genesis {

using autograd::record;
using detail::call;
using detail::call1;
namespace R = autograd::rules;

namespace {
Error invalid(const char* op, const std::string& msg) {
  return Error(GN_ERR_INVALID_ARGUMENT, std::string("[") + op + "] " + msg);
}

// gather, index_select, scatter and scatter_add: y = op(inputs; dim), recorded with `rule`,
// which reads the index (inputs[1]) and dim.
Tensor record_along_dim(const char* name, const gn_op* op, autograd::Rule rule, std::initializer_list<Tensor> inputs,
                        int64_t dim, Tensor y) {
  if (auto n = record(name, rule, inputs, y)) {
    n->save("index", inputs.begin()[1].detach());
    n->keep_attrs(op, {gn_attr_int(dim)});
  }
  return y;
}
}  // namespace

Tensor Tensor::gather(int64_t dim, const Tensor& index) const {
  const gn_op* op = GN_OP_HANDLE("gather");
  return record_along_dim("gather", op, R::gather, {*this, index}, dim, call1(op, {this, &index}, {gn_attr_int(dim)}));
}

Tensor Tensor::index_select(int64_t dim, const Tensor& index) const {
  const gn_op* op = GN_OP_HANDLE("index_select");
  return record_along_dim("index_select", op, R::index_select, {*this, index}, dim,
                          call1(op, {this, &index}, {gn_attr_int(dim)}));
}

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  const gn_op* op = GN_OP_HANDLE("scatter");
  return record_along_dim("scatter", op, R::scatter, {x, index, src}, dim,
                          call1(op, {&x, &index, &src}, {gn_attr_int(dim)}));
}

Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  const gn_op* op = GN_OP_HANDLE("scatter_add");
  return record_along_dim("scatter_add", op, R::scatter_add, {x, index, src}, dim,
                          call1(op, {&x, &index, &src}, {gn_attr_int(dim)}));
}

Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, double alpha) {
  const gn_op* op = GN_OP_HANDLE("index_add");
  const auto attrs = {gn_attr_int(dim), gn_attr_float(alpha)};
  Tensor y = call1(op, {&x, &index, &src}, attrs);
  if (auto n = record("index_add", R::index_add, {x, index, src}, y)) {
    n->save("index", index.detach());
    n->keep_attrs(op, attrs);
  }
  return y;
}

Tensor Tensor::masked_fill(const Tensor& mask, double value) const {
  Tensor y = call1(GN_OP_HANDLE("masked_fill"), {this, &mask}, {gn_attr_float(value)});
  if (auto n = record("masked_fill", R::masked_fill, {*this, mask}, y)) n->save("mask", mask.detach());
  return y;
}

Tensor Tensor::triu(int64_t diagonal) const {
  const gn_op* op = GN_OP_HANDLE("triu");
  Tensor y = call1(op, {this}, {gn_attr_int(diagonal)});
  if (auto n = record("triu", R::triu, {*this}, y)) n->keep_attrs(op, {gn_attr_int(diagonal)});
  return y;
}

Tensor Tensor::tril(int64_t diagonal) const {
  const gn_op* op = GN_OP_HANDLE("tril");
  Tensor y = call1(op, {this}, {gn_attr_int(diagonal)});
  if (auto n = record("tril", R::tril, {*this}, y)) n->keep_attrs(op, {gn_attr_int(diagonal)});
  return y;
}

std::pair<Tensor, Tensor> Tensor::topk(int64_t k, int64_t dim, bool largest, bool sorted) const {
  const gn_op* op = GN_OP_HANDLE("topk");
  const auto attrs = {gn_attr_int(k), gn_attr_int(dim), gn_attr_int(largest ? 1 : 0), gn_attr_int(sorted ? 1 : 0)};
  auto out = call(op, {this}, attrs, 2);
  // values = x gathered at indices: the gradient scatters back (shared rule with sort).
  if (auto n = record("topk", R::take_along, {*this}, out[0])) {
    n->save("indices", out[1]);
    n->keep_attrs(op, attrs);
  }
  return {out[0], out[1]};
}

std::pair<Tensor, Tensor> Tensor::sort(int64_t dim, bool descending) const {
  const gn_op* op = GN_OP_HANDLE("sort");
  const auto attrs = {gn_attr_int(dim), gn_attr_int(descending ? 1 : 0), gn_attr_int(1)};
  auto out = call(op, {this}, attrs, 2);
  if (auto n = record("sort", R::take_along, {*this}, out[0])) {
    n->save("indices", out[1]);
    n->keep_attrs(op, attrs);
  }
  return {out[0], out[1]};
}

Tensor Tensor::argsort(int64_t dim, bool descending) const {
  return call1(GN_OP_HANDLE("argsort"), {this}, {gn_attr_int(dim), gn_attr_int(descending ? 1 : 0), gn_attr_int(1)});
}

std::vector<Tensor> Tensor::split_with_sizes(const std::vector<int64_t>& sizes, int64_t dim) const {
  const int64_t d = detail::wrap_dim(dim, this->dim());
  if (d < 0 || d >= this->dim()) throw Error(GN_ERR_INDEX, "[split] dim " + std::to_string(dim) + " out of range");
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) throw invalid("split", "negative split size");
    total += s;
  }
  if (total != size(d))
    throw invalid("split", "sizes sum to " + std::to_string(total) + " but dim " + std::to_string(d) + " has size " +
                               std::to_string(size(d)));
  // One C call returns every part as a view; each part is its own autograd
  // node with the slice rule (gradients of the parts add up in x's buffer).
  gn_tensor* in[1] = {handle()};
  gn_attr_value attrs[2] = {gn_attr_ints(sizes.data(), sizes.size()), gn_attr_int(d)};
  std::vector<gn_tensor*> out(sizes.size(), nullptr);
  check(gn_op_call(runtime(), GN_OP_HANDLE("split"), in, 1, attrs, 2, out.data(), out.size()), "split");
  std::vector<Tensor> parts;
  parts.reserve(out.size());
  for (gn_tensor* h : out) parts.push_back(Tensor::adopt(h));
  int64_t start = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    autograd::detail::mark_view(parts[i], *this);
    if (auto n = record("split", R::slice, {*this}, parts[i])) {  // the slice rule's attributes
      n->keep_attr("dim", gn_attr_int(d));
      n->keep_attr("start", gn_attr_int(start));
      n->keep_attr("stop", gn_attr_int(start + sizes[i]));
      n->keep_attr("step", gn_attr_int(1));
    }
    start += sizes[i];
  }
  return parts;
}

std::vector<Tensor> Tensor::split(int64_t size_, int64_t dim) const {
  if (size_ <= 0) throw invalid("split", "split size must be positive");
  const int64_t n = size(dim);
  std::vector<int64_t> sizes;
  for (int64_t s = 0; s < n; s += size_) sizes.push_back(std::min(size_, n - s));
  if (sizes.empty()) sizes.push_back(0);
  return split_with_sizes(sizes, dim);
}

std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t dim) const {
  if (chunks <= 0) throw invalid("chunk", "number of chunks must be positive");
  const int64_t n = size(dim);
  return split(std::max<int64_t>(1, (n + chunks - 1) / chunks), dim);
}

Tensor one_hot(const Tensor& ids, int64_t num_classes) {
  return call1(GN_OP_HANDLE("one_hot"), {&ids}, {gn_attr_int(num_classes)});
}

Tensor bmm(const Tensor& a_, const Tensor& b_, bool trans_a, bool trans_b) {
  Tensor a = a_, b = b_;
  GN_AUTOCAST("bmm", &a, &b);  // AMP hook
  const gn_op* op = GN_OP_HANDLE("bmm");
  const auto attrs = {gn_attr_int(trans_a ? 1 : 0), gn_attr_int(trans_b ? 1 : 0)};
  Tensor y = call1(op, {&a, &b}, attrs);
  if (auto n = record("bmm", R::bmm, {a, b}, y)) {
    n->save("a", a.detach());
    n->save("b", b.detach());
    n->keep_attrs(op, attrs);
  }
  return y;
}

}  // namespace genesis

// ------------------------------------------------------ x.index({...})

namespace genesis {

TensorIndex::TensorIndex(Tensor t) : kind_(Kind::tensor), t_(std::make_shared<Tensor>(std::move(t))) {}
const Tensor& TensorIndex::tensor() const { return *t_; }

namespace {

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// Row-major flat positions of the true elements of a bool mask (read on the host: the result's
// size depends on the values, so masking syncs, as in torch).
std::vector<int64_t> true_positions(const Tensor& mask) {
  if (mask.dtype() != DType::boolean) throw Error(GN_ERR_DTYPE, "[index] masks must be bool tensors");
  const std::vector<double> v = mask.tolist();
  std::vector<int64_t> pos;
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] != 0) pos.push_back(static_cast<int64_t>(i));
  return pos;
}

Tensor positions_tensor(const std::vector<int64_t>& pos, const Device& d) {
  return tensor(pos, {static_cast<int64_t>(pos.size())}, {.device = d});
}

// a's shape with dims [d, d + k) replaced by `mid`.
Shape replace_dims(const Shape& a, int64_t d, int64_t k, const Shape& mid) {
  Shape out(a.begin(), a.begin() + d);
  out.insert(out.end(), mid.begin(), mid.end());
  out.insert(out.end(), a.begin() + d + k, a.end());
  return out;
}

void check_mask_shape(const Tensor& y, int64_t d, const Tensor& mask) {
  const Shape ys = y.shape(), ms = mask.shape();
  const bool fits = d + static_cast<int64_t>(ms.size()) <= static_cast<int64_t>(ys.size()) &&
                    std::equal(ms.begin(), ms.end(), ys.begin() + d);
  if (!fits)
    throw Error(GN_ERR_INDEX, "[index] the shape of the mask " + shape_str(ms) + " at index " + std::to_string(d) +
                                  " does not match the shape of the indexed tensor " + shape_str(ys));
}

// Where a bool mask sits in an assignment's target view: dims [dim, dim + mask.dim()).
struct MaskAt {
  int64_t dim = -1;
  Tensor mask;
};

// The view (or copy, for tensor entries) that `indices` pick out of x.  In an assignment
// (allow_copy false) a bool mask leaves its dims in the view and is reported through `mask_at`.
Tensor apply_index(const Tensor& x, const TensorIndex* first, const TensorIndex* last, bool allow_copy,
                   MaskAt* mask_at = nullptr) {
  using K = TensorIndex::Kind;
  int64_t consumed = 0, ellipses = 0, tensors = 0, masks = 0;
  for (const TensorIndex* i = first; i != last; ++i) {
    const bool is_mask = i->kind() == K::tensor && i->tensor().dtype() == DType::boolean;
    if (i->kind() == K::integer || i->kind() == K::slice || (i->kind() == K::tensor && !is_mask)) ++consumed;
    if (is_mask) consumed += i->tensor().dim();
    if (i->kind() == K::ellipsis) ++ellipses;
    tensors += i->kind() == K::tensor;
    masks += is_mask;
  }
  if (ellipses > 1) throw invalid("index", "an index can only have a single ellipsis ('...')");
  if (masks > 0 && tensors > 1)
    throw Error(GN_ERR_UNSUPPORTED, "[index] a bool mask cannot be combined with other tensor indices");
  if (consumed > x.dim())
    throw Error(GN_ERR_INDEX, "[index] too many indices for tensor of dimension " + std::to_string(x.dim()) + " (got " +
                                  std::to_string(consumed) + ")");
  Tensor y = x;
  int64_t d = 0;  // the dim of y the next entry applies to
  for (const TensorIndex* it = first; it != last; ++it) {
    const TensorIndex& i = *it;
    switch (i.kind()) {
      case K::integer: {
        const int64_t n = y.size(d);
        const int64_t k = i.integer() < 0 ? i.integer() + n : i.integer();
        if (k < 0 || k >= n)
          throw Error(GN_ERR_INDEX, "[index] index " + std::to_string(i.integer()) +
                                        " is out of bounds for dimension " + std::to_string(d) + " with size " +
                                        std::to_string(n));
        y = y.select(d, k);
        break;
      }
      case K::slice: {
        const auto& s = i.slice();
        if (s.step <= 0) throw invalid("index", "slice step must be positive");
        const int64_t n = y.size(d);
        auto clampi = [n](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + n : v, 0, n); };
        const int64_t start = s.start ? clampi(*s.start) : 0, stop = s.stop ? clampi(*s.stop) : n;
        y = y.slice(d, start, std::max(start, stop), s.step);
        ++d;
        break;
      }
      case K::none:
        y = y.unsqueeze(d);
        ++d;
        break;
      case K::ellipsis: d += x.dim() - consumed; break;
      case K::tensor: {
        Tensor t = i.tensor();
        if (t.dtype() == DType::boolean) {
          if (t.dim() == 0) {  // x[True] adds a dim of size 1, x[False] one of size 0
            y = y.unsqueeze(d);
            t = t.reshape({1});
          }
          check_mask_shape(y, d, t);
          if (!allow_copy) {  // the assignment writes through the mask's dims of this view
            mask_at->dim = d;
            mask_at->mask = t;
            d += t.dim();
            break;
          }
          // The mask's dims become one dim of its true positions: (A, M..., B) -> (A, n, B).
          int64_t count = 1;
          for (int64_t s : t.shape()) count *= s;
          y = y.reshape(replace_dims(y.shape(), d, t.dim(), {count}));
          y = y.index_select(d, positions_tensor(true_positions(t), y.device()));
          ++d;
          break;
        }
        if (!allow_copy) throw invalid("index_put_", "tensor indices are not supported here (use index_add/scatter)");
        if (is_floating(t.dtype()) || t.dim() != 1)
          throw invalid("index", "tensor indices must be 1-D integer tensors");
        y = y.index_select(d, t);
        ++d;
        break;
      }
    }
  }
  return y;
}

// view[mask] = value, the mask covering dims [at.dim, at.dim + mask.dim()) of view; value is a
// number (fill) or a tensor broadcast to view[mask]'s shape (A, n, B).
void masked_put(Tensor& view, const MaskAt& at, const Tensor* value, double number) {
  const Shape vs = view.shape(), ms = at.mask.shape();
  const int64_t d = at.dim, k = static_cast<int64_t>(ms.size());
  if (!value) {
    // The mask with size-1 dims around it broadcasts against the view.
    Shape mb(vs.size(), 1);
    std::copy(ms.begin(), ms.end(), mb.begin() + d);
    view.copy_(view.masked_fill(at.mask.reshape(mb), number));
    return;
  }
  const std::vector<int64_t> pos = true_positions(at.mask);
  const int64_t n = static_cast<int64_t>(pos.size());
  if (n == 0) return;
  int64_t count = 1;
  for (int64_t s : ms) count *= s;
  const Shape target = replace_dims(vs, d, k, {n});  // the shape view[mask] has
  Tensor src = value->to(view.dtype()).to(view.device());
  if (src.dim() < static_cast<int64_t>(target.size())) {  // leading size-1 dims, as broadcasting adds
    Shape s(target.size() - src.dim(), 1);
    for (int64_t e : src.shape()) s.push_back(e);
    src = src.reshape(s);
  }
  src = src.expand(target).contiguous();
  // Each written element's row along dim d: its position in the flattened mask.
  Shape ib(target.size(), 1);
  ib[d] = n;
  Tensor index = positions_tensor(pos, view.device()).reshape(ib).expand(target).contiguous();
  Tensor flat = view.reshape(replace_dims(vs, d, k, {count}));
  view.copy_(scatter(flat, d, index, src).reshape(vs));
}

Tensor& put(Tensor& x, const TensorIndex* first, const TensorIndex* last, const Tensor* value, double number) {
  detail::check_inplace(x, "index_put_");
  MaskAt at;
  Tensor view = apply_index(x, first, last, false, &at);
  if (at.mask.defined()) {
    masked_put(view, at, value, number);
  } else if (value) {
    view.copy_(*value);
  } else {
    view.fill_(number);
  }
  return x;
}

}  // namespace

Tensor Tensor::nonzero() const {
  const std::vector<double> v = tolist();
  const Shape s = shape();
  const int64_t nd = dim();
  std::vector<int64_t> coords;
  int64_t rows = 0;
  for (size_t f = 0; f < v.size(); ++f) {
    if (v[f] == 0) continue;
    ++rows;
    // Row-major coordinates of flat position f.
    std::vector<int64_t> c(static_cast<size_t>(nd));
    int64_t rest = static_cast<int64_t>(f);
    for (int64_t d = nd - 1; d >= 0; --d) {
      c[d] = rest % s[d];
      rest /= s[d];
    }
    coords.insert(coords.end(), c.begin(), c.end());
  }
  return tensor(coords, {rows, nd}, {.device = device()});
}

Tensor Tensor::masked_select(const Tensor& mask) const {
  // Broadcast x and the mask to one shape, then pick the true positions of the flattened pair.
  const Shape a = shape(), b = mask.shape();
  const size_t n = std::max(a.size(), b.size());
  Shape s(n, 1);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      throw Error(GN_ERR_SHAPE,
                  "[masked_select] shapes " + shape_str(a) + " and " + shape_str(b) + " cannot be broadcast");
    s[i] = da == 1 ? db : da;
  }
  Tensor xs = a == s ? *this : expand(s);
  Tensor ms = b == s ? mask : mask.expand(s);
  return xs.reshape({-1}).index_select(0, positions_tensor(true_positions(ms), device()));
}

Tensor Tensor::index(std::initializer_list<TensorIndex> indices) const {
  return apply_index(*this, indices.begin(), indices.end(), true);
}

Tensor Tensor::index(const std::vector<TensorIndex>& indices) const {
  return apply_index(*this, indices.data(), indices.data() + indices.size(), true);
}

Tensor& Tensor::index_put_(std::initializer_list<TensorIndex> indices, const Tensor& value) {
  return put(*this, indices.begin(), indices.end(), &value, 0);
}

Tensor& Tensor::index_put_(std::initializer_list<TensorIndex> indices, double value) {
  return put(*this, indices.begin(), indices.end(), nullptr, value);
}

Tensor& Tensor::index_put_(const std::vector<TensorIndex>& indices, const Tensor& value) {
  return put(*this, indices.data(), indices.data() + indices.size(), &value, 0);
}

Tensor& Tensor::index_put_(const std::vector<TensorIndex>& indices, double value) {
  return put(*this, indices.data(), indices.data() + indices.size(), nullptr, value);
}

}  // namespace genesis

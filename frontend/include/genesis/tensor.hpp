// genesis/tensor.hpp - genesis::Tensor, the C++ face of Genesis.
//
// A Tensor is a shared handle (copying it shares data and autograd state, as
// in PyTorch) to an Impl that owns one gn_tensor* reference plus the autograd
// metadata.  Everything goes through the public C API (genesis/genesis.h).
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "genesis/error.hpp"
#include "genesis/genesis.h"

namespace genesis {

// ----------------------------------------------------------------- runtime

/** How the process-wide runtime is created (see gn_runtime_options). */
struct RuntimeOptions {
  std::string plugin_path;        ///< colon-separated dirs searched first
  std::string plugins;            ///< comma-separated plugin names; empty = all found
  std::string backends;           ///< "cpu=reference,cuda=cuda"; empty = best score
  bool no_default_paths = false;  ///< skip $GENESIS_PLUGIN_PATH and the built-in dir
  bool quiet = true;              ///< do not print plugin rejections
  int num_threads = 0;            ///< CPU threads; 0 = $OMP_NUM_THREADS, $GENESIS_NUM_THREADS, else the cores
};

/** Creates the runtime with these options; must run before the first use, else throws. */
void init(const RuntimeOptions& options);
/** The process-wide runtime, created from default options on first use. */
gn_runtime* runtime();
/** Seeds every device's default generator. */
void manual_seed(uint64_t seed);
/** Sets the CPU backend's thread count (torch.set_num_threads); n <= 0 restores the default. */
void set_num_threads(int n);
/** The CPU backend's thread count in effect (torch.get_num_threads). */
int get_num_threads();

// ------------------------------------------------------------ dtype/device

/** Element types, same values as gn_dtype. */
enum class DType : int32_t {
  f32 = GN_F32,
  f16 = GN_F16,
  bf16 = GN_BF16,
  f64 = GN_F64,
  i8 = GN_I8,
  u8 = GN_U8,
  i32 = GN_I32,
  i64 = GN_I64,
  boolean = GN_BOOL
};
inline constexpr DType float32 = DType::f32;      ///< torch.float32
inline constexpr DType float16 = DType::f16;      ///< torch.float16
inline constexpr DType bfloat16 = DType::bf16;    ///< torch.bfloat16
inline constexpr DType float64 = DType::f64;      ///< torch.float64
inline constexpr DType int32 = DType::i32;        ///< torch.int32
inline constexpr DType int64 = DType::i64;        ///< torch.int64
inline constexpr DType boolean = DType::boolean;  ///< torch.bool

/** "float32", "int64", ... */
const char* dtype_name(DType d);
/** The dtype a name spells, as every command-line flag and config file accepts it: torch's names
 * ("float32", "bfloat16", "int64", "bool"; also "float", "half", "double", "long", "int"), the
 * short forms ("f32", "fp32", "bf16", "f16", "fp16", "f64", "i64", ...); nullopt for anything else. */
std::optional<DType> dtype_from_name(std::string_view name);
/** True for f32/f16/bf16/f64. */
bool is_floating(DType d);

/** A device such as Device("cpu") or Device("cuda:0"). */
class Device {
 public:
  /** The CPU. */
  Device();
  /** Parses "cpu", "cuda", "cuda:1" (throws genesis::Error when unknown). */
  Device(const char* spec);  // NOLINT: implicit, as torch.device strings
  /** Parses a device string. */
  Device(const std::string& spec) : Device(spec.c_str()) {}  // NOLINT
  /** Wraps a C device. */
  explicit Device(gn_device d) : d_(d) {}
  /** The C device. */
  gn_device c() const { return d_; }
  /** Device type name ("cpu", "cuda"). */
  std::string type() const;
  /** Ordinal within the type. */
  int32_t index() const { return d_.index; }
  /** "cpu:0", "cuda:1". */
  std::string str() const;
  /** Same type and index. */
  bool operator==(const Device& o) const { return d_.type == o.d_.type && d_.index == o.d_.index; }

 private:
  gn_device d_;
};

/** True when at least one CUDA device is usable. */
bool cuda_available();

using Shape = std::vector<int64_t>;

/** Reduction dims: an int, a list, or nothing (= all dims). */
struct Dims {
  std::vector<int64_t> v;
  /** All dims. */
  Dims() = default;
  /** One dim. */
  Dims(int64_t d) : v{d} {}  // NOLINT
  /** Several dims. */
  Dims(std::initializer_list<int64_t> d) : v(d) {}  // NOLINT
  /** Several dims. */
  Dims(std::vector<int64_t> d) : v(std::move(d)) {}  // NOLINT
};

/** A number used as an operand: keeps "int" vs "float" so promotion matches torch. */
struct Scalar {
  double value;
  DType kind;  ///< i64, f64 or boolean: the category of the number
  /** From any arithmetic type. */
  template <class T, class = std::enable_if_t<std::is_arithmetic_v<T>>>
  Scalar(T v)  // NOLINT
      : value(static_cast<double>(v)),
        kind(std::is_same_v<T, bool> ? DType::boolean
             : std::is_integral_v<T> ? DType::i64
                                     : DType::f64) {}
};

/** Creation options: dtype (unset = inferred or float32), device, requires_grad. */
struct Options {
  std::optional<DType> dtype = std::nullopt;
  std::optional<Device> device = std::nullopt;
  bool requires_grad = false;
};

namespace autograd {
struct Node;
struct VersionCounter;
}  // namespace autograd

class Tensor;
class TensorIndex;
/** A gradient hook: returns a replacement gradient, or an undefined Tensor to keep it. */
using Hook = std::function<Tensor(const Tensor&)>;

// ------------------------------------------------------------------ Tensor

/** A multi-dimensional array with optional autograd, shared like a torch.Tensor. */
class Tensor {
 public:
  struct Impl;

  /** An undefined tensor (no data). */
  Tensor() = default;
  /** Takes ownership of one reference to h (may be NULL). */
  static Tensor adopt(gn_tensor* h);
  /** Shares h (adds a reference). */
  static Tensor borrow(gn_tensor* h);
  /** A Tensor sharing impl (the same autograd state): how hooks hand out the leaf itself. */
  static Tensor from_impl(std::shared_ptr<Impl> impl) {
    Tensor t;
    t.impl_ = std::move(impl);
    return t;
  }

  /** True when the tensor holds data. */
  bool defined() const { return impl_ != nullptr; }
  /** The C handle (borrowed). */
  gn_tensor* handle() const;
  /** Autograd/data state shared by copies. */
  const std::shared_ptr<Impl>& impl() const { return impl_; }
  /** True when both share one Impl. */
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }

  // ---- metadata
  /** Rank. */
  int64_t dim() const;
  /** Shape. */
  Shape shape() const;
  /** Size of dim d (negative counts from the end). */
  int64_t size(int64_t d) const;
  /** Strides in elements. */
  Shape strides() const;
  /** Number of elements. */
  int64_t numel() const;
  /** Element type. */
  DType dtype() const;
  /** Device. */
  Device device() const;
  /** True when dense row-major. */
  bool is_contiguous() const;

  // ---- conversion
  /** Copy to another device (autograd-aware). */
  Tensor to(const Device& d) const;
  /** Convert dtype (autograd-aware). */
  Tensor to(DType t) const;
  /** The single element converted to T (throws unless numel()==1). */
  template <class T>
  T item() const {
    return static_cast<T>(item_double());
  }
  /** The single element as double. */
  double item_double() const;
  /** All elements in row-major order as doubles. */
  std::vector<double> tolist() const;
  /** Dense copy, or this tensor when already contiguous. */
  Tensor contiguous() const;
  /** A new tensor with copied data (autograd-aware). */
  Tensor clone() const;

  // ---- autograd
  /** Whether gradients flow to this tensor. */
  bool requires_grad() const;
  /** Marks a leaf as requiring grad; returns *this. */
  Tensor& requires_grad_(bool on = true);
  /** The accumulated gradient (undefined until backward reaches this tensor). */
  Tensor grad() const;
  /** Replaces the accumulated gradient (pass Tensor() to clear). */
  void set_grad(const Tensor& g) const;
  /** The node that produced this tensor (null for leaves). */
  std::shared_ptr<autograd::Node> grad_fn() const;
  /** True for tensors not produced by a recorded op. */
  bool is_leaf() const;
  /** Keep .grad() on a non-leaf after backward. */
  void retain_grad() const;
  /** Backpropagates from this tensor; gradient defaults to ones for a one-element tensor. */
  void backward(const Tensor& gradient = Tensor(), bool retain_graph = false) const;
  /** backward() recording the backward pass itself when create_graph (double backward), and
   * accumulating only into the .grad of `inputs` when they are given (torch's backward(inputs=)). */
  void backward(const Tensor& gradient, bool retain_graph, bool create_graph,
                const std::vector<Tensor>& inputs = {}) const;
  /** How many in-place writes the storage has seen (torch's _version; views share it). */
  uint32_t version() const;
  /** Hook run with this tensor's gradient (leaves: when it is accumulated); may return a replacement. */
  template <class F>
  void register_hook(F f) const {
    if constexpr (std::is_void_v<std::invoke_result_t<F, const Tensor&>>)
      add_hook([f](const Tensor& g) {
        f(g);
        return Tensor();
      });
    else
      add_hook(Hook(f));
  }
  /** Hook run on a leaf after backward added its gradient into .grad (torch's
   * register_post_accumulate_grad_hook); it receives the leaf and may read leaf.grad(). */
  void register_post_accumulate_grad_hook(std::function<void(const Tensor&)> f) const;
  /** Same data, cut from the graph. */
  Tensor detach() const;

  // ---- elementwise unary
  Tensor neg() const;                           ///< -x
  Tensor abs() const;                           ///< |x|
  Tensor sign() const;                          ///< -1, 0, 1
  Tensor exp() const;                           ///< e^x
  Tensor log() const;                           ///< natural log
  Tensor log1p() const;                         ///< log(1+x)
  Tensor sqrt() const;                          ///< square root
  Tensor rsqrt() const;                         ///< 1/sqrt(x)
  Tensor sin() const;                           ///< sine
  Tensor cos() const;                           ///< cosine
  Tensor tanh() const;                          ///< tanh
  Tensor sigmoid() const;                       ///< 1/(1+e^-x)
  Tensor relu() const;                          ///< max(x, 0)
  Tensor gelu(bool tanh_approx = false) const;  ///< x*Phi(x) (tanh form if asked)
  Tensor silu() const;                          ///< x*sigmoid(x)
  Tensor reciprocal() const;                    ///< 1/x
  Tensor square() const;                        ///< x*x
  Tensor floor() const;                         ///< round down
  Tensor ceil() const;                          ///< round up
  Tensor round() const;                         ///< half to even
  Tensor clamp(double lo, double hi) const;     ///< min(max(x, lo), hi)
  Tensor pow(const Scalar& p) const;            ///< x**p
  Tensor pow(const Tensor& p) const;            ///< x**p elementwise
  Tensor logical_not() const;                   ///< x == 0 (bool)
  Tensor isnan() const;                         ///< bool
  Tensor isinf() const;                         ///< bool
  Tensor isfinite() const;                      ///< bool

  // ---- binary
  Tensor add(const Tensor& o, double alpha = 1) const;  ///< x + alpha*o
  Tensor sub(const Tensor& o, double alpha = 1) const;  ///< x - alpha*o
  Tensor mul(const Tensor& o) const;                    ///< x*o
  Tensor div(const Tensor& o) const;                    ///< x/o (true division)
  Tensor maximum(const Tensor& o) const;                ///< elementwise max
  Tensor minimum(const Tensor& o) const;                ///< elementwise min
  Tensor eq(const Tensor& o) const;                     ///< bool x == o
  Tensor ne(const Tensor& o) const;                     ///< bool x != o
  Tensor lt(const Tensor& o) const;                     ///< bool x < o
  Tensor le(const Tensor& o) const;                     ///< bool x <= o
  Tensor gt(const Tensor& o) const;                     ///< bool x > o
  Tensor ge(const Tensor& o) const;                     ///< bool x >= o
  Tensor matmul(const Tensor& o) const;                 ///< torch.matmul

  // ---- reductions (dims {} = all)
  Tensor sum(Dims dims = {}, bool keepdim = false) const;                         ///< sum over dims
  Tensor mean(Dims dims = {}, bool keepdim = false) const;                        ///< mean over dims
  Tensor prod(Dims dims = {}, bool keepdim = false) const;                        ///< product over dims
  Tensor max(Dims dims = {}, bool keepdim = false) const;                         ///< max values over dims (torch.amax)
  Tensor min(Dims dims = {}, bool keepdim = false) const;                         ///< min values over dims (torch.amin)
  Tensor argmax(std::optional<int64_t> dim = {}, bool keepdim = false) const;     ///< int64 index of the max
  Tensor argmin(std::optional<int64_t> dim = {}, bool keepdim = false) const;     ///< int64 index of the min
  Tensor var(Dims dims = {}, double correction = 1, bool keepdim = false) const;  ///< variance
  Tensor std(Dims dims = {}, double correction = 1, bool keepdim = false) const;  ///< standard deviation
  Tensor logsumexp(Dims dims, bool keepdim = false) const;                        ///< log(sum(exp(x)))
  Tensor norm(double p = 2, Dims dims = {}, bool keepdim = false) const;          ///< p-norm
  Tensor softmax(int64_t dim) const;                                              ///< softmax along dim
  Tensor log_softmax(int64_t dim) const;                                          ///< log-softmax along dim

  // ---- indexing, masking, sorting (frontend/src/tensor_indexing.cpp)
  Tensor masked_fill(const Tensor& mask, double value) const;  ///< where(mask, value, x) (mask broadcasts)
  Tensor triu(int64_t diagonal = 0) const;                     ///< zero below the diagonal of the last two dims
  Tensor tril(int64_t diagonal = 0) const;                     ///< zero above the diagonal of the last two dims
  /** The k largest (or smallest) values along dim and their int64 indices. */
  std::pair<Tensor, Tensor> topk(int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true) const;
  /** Values sorted along dim (stable) and their int64 indices. */
  std::pair<Tensor, Tensor> sort(int64_t dim = -1, bool descending = false) const;
  /** int64 indices that sort along dim (stable). */
  Tensor argsort(int64_t dim = -1, bool descending = false) const;
  /** Views of chunks of `size` along dim (the last may be smaller), as torch.split(int). */
  std::vector<Tensor> split(int64_t size, int64_t dim = 0) const;
  /** Views with these sizes along dim (they must sum to the dim's size). */
  std::vector<Tensor> split_with_sizes(const std::vector<int64_t>& sizes, int64_t dim = 0) const;
  /** `chunks` views of ceil(size/chunks) along dim, as torch.chunk. */
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;
  /** x[index] along dim with a 1-D integer index (copy). */
  Tensor index_select(int64_t dim, const Tensor& index) const;
  /** out[i][j] = x[index[i][j]][j] for dim 0 (torch.gather). */
  Tensor gather(int64_t dim, const Tensor& index) const;
  /** int64 (n, dim()) coordinates of the nonzero elements in row-major order (torch.nonzero; syncs). */
  Tensor nonzero() const;
  /** 1-D copy of the elements where the bool mask (broadcast with x) is true (torch.masked_select). */
  Tensor masked_select(const Tensor& mask) const;

  // ---- views (share storage)
  Tensor reshape(Shape shape) const;               ///< new shape (copies if needed)
  Tensor view(Shape shape) const;                  ///< new shape, never copies
  Tensor permute(Shape dims) const;                ///< reorder dims
  Tensor transpose(int64_t d0, int64_t d1) const;  ///< swap two dims
  Tensor t() const;                                ///< transpose of a 2-D tensor
  Tensor slice(int64_t dim, int64_t start, int64_t stop,
               int64_t step = 1) const;                                ///< start:stop:step (Python-like negatives)
  Tensor select(int64_t dim, int64_t index) const;                     ///< pick index along dim (negative allowed)
  Tensor operator[](int64_t index) const { return select(0, index); }  ///< x[i]
  /** torch's x[...] with several entries: x.index({1, Slice(0, 4, 2), Ellipsis, None, ids}).  Ints select
   * (drop the dim), Slices are views, None inserts a dim, Ellipsis stands for the dims not named, a 1-D
   * integer Tensor gathers along its dim (a copy), a bool Tensor is a mask over as many dims as it has
   * (they become one dim of the selected positions, a copy).  Autograd-aware. */
  Tensor index(std::initializer_list<TensorIndex> indices) const;
  /** index() with the entries in a vector. */
  Tensor index(const std::vector<TensorIndex>& indices) const;
  /** x[indices] = value in place; the only Tensor entry allowed is one bool mask, after which only
   * Ellipsis may follow (value broadcasts to what x[indices] would be); returns *this. */
  Tensor& index_put_(std::initializer_list<TensorIndex> indices, const Tensor& value);
  /** x[indices] = number in place; returns *this. */
  Tensor& index_put_(std::initializer_list<TensorIndex> indices, double value);
  /** index_put_() with the entries in a vector. */
  Tensor& index_put_(const std::vector<TensorIndex>& indices, const Tensor& value);
  /** index_put_() of a number with the entries in a vector. */
  Tensor& index_put_(const std::vector<TensorIndex>& indices, double value);
  Tensor expand(Shape shape) const;                                      ///< broadcast size-1 dims (-1 keeps)
  Tensor expand_as(const Tensor& o) const { return expand(o.shape()); }  ///< expand to o's shape
  Tensor squeeze(std::optional<int64_t> dim = {}) const;                 ///< drop size-1 dim(s)
  Tensor unsqueeze(int64_t dim) const;                                   ///< insert a size-1 dim
  Tensor flatten(int64_t start = 0, int64_t end = -1) const;             ///< merge dims start..end

  // ---- in place: each bumps the storage's version; on a tensor that is not a leaf requiring grad
  // (or on any tensor, with an operand that requires grad) the op is recorded and becomes the
  // tensor's history (a view's write becomes its base's, as torch's CopySlices); a leaf that
  // requires grad, or a view of one, is refused while grad mode is on
  Tensor& add_(const Tensor& o, double alpha = 1);         ///< x += alpha*o
  Tensor& sub_(const Tensor& o, double alpha = 1);         ///< x -= alpha*o
  Tensor& mul_(const Tensor& o);                           ///< x *= o
  Tensor& mul_(const Scalar& s);                           ///< x *= s
  Tensor& add_(const Scalar& s);                           ///< x += s
  Tensor& div_(const Tensor& o);                           ///< x /= o
  Tensor& zero_();                                         ///< x = 0
  Tensor& fill_(double v);                                 ///< x = v
  Tensor& copy_(const Tensor& src);                        ///< x = src (broadcast, converted)
  Tensor& masked_fill_(const Tensor& mask, double value);  ///< x = where(mask, value, x)
  Tensor& clamp_(double lo, double hi);                    ///< x = min(max(x, lo), hi)
  /** x = op(x) for a one-input op of ops.def with a GN_UNARY_GRAD row (exp_, relu_, ...) or a
   * piecewise-constant one (floor_, sign_, ...). */
  Tensor& unary_(const std::string& op);

 private:
  void add_hook(Hook h) const;
  std::shared_ptr<Impl> impl_;
};

// --------------------------------------------------------------- indexing

namespace indexing {
/** start:stop:step of Python (unset = from the start / to the end; negatives count from the end). */
struct Slice {
  std::optional<int64_t> start, stop;
  int64_t step = 1;
  /** Slice() is ":"; Slice(1, 3) is "1:3"; Slice(std::nullopt, std::nullopt, 2) is "::2". */
  Slice(std::optional<int64_t> start_ = std::nullopt, std::optional<int64_t> stop_ = std::nullopt, int64_t step_ = 1)
      : start(start_), stop(stop_), step(step_) {}
};
/** "..." of Python. */
struct EllipsisIndexType {};
inline constexpr EllipsisIndexType Ellipsis{};
/** None (new axis) of Python. */
struct NoneIndexType {};
inline constexpr NoneIndexType None{};
}  // namespace indexing

/** One entry of Tensor::index: an int, a Slice, Ellipsis, None, an integer Tensor or a bool mask. */
class TensorIndex {
 public:
  enum class Kind { integer, slice, ellipsis, none, tensor };
  TensorIndex(int64_t i) : kind_(Kind::integer), i_(i) {}              // NOLINT
  TensorIndex(int i) : kind_(Kind::integer), i_(i) {}                  // NOLINT
  TensorIndex(indexing::Slice s) : kind_(Kind::slice), slice_(s) {}    // NOLINT
  TensorIndex(indexing::EllipsisIndexType) : kind_(Kind::ellipsis) {}  // NOLINT
  TensorIndex(indexing::NoneIndexType) : kind_(Kind::none) {}          // NOLINT
  TensorIndex(Tensor t);                                               // NOLINT
  /** Which alternative this is. */
  Kind kind() const { return kind_; }
  /** The int (Kind::integer). */
  int64_t integer() const { return i_; }
  /** The slice (Kind::slice). */
  const indexing::Slice& slice() const { return slice_; }
  /** The tensor (Kind::tensor). */
  const Tensor& tensor() const;

 private:
  Kind kind_;
  int64_t i_ = 0;
  indexing::Slice slice_;
  std::shared_ptr<Tensor> t_;
};

/** Autograd state shared by all copies of a Tensor. */
struct Tensor::Impl {
  gn_tensor* h = nullptr;  ///< owned reference
  bool requires_grad = false;
  bool retains_grad = false;
  std::shared_ptr<autograd::Node> grad_fn;         ///< null for leaves
  std::weak_ptr<autograd::Node> grad_accumulator;  ///< leaves: the node that accumulates .grad
  std::shared_ptr<Impl> grad;                      ///< accumulated gradient
  std::vector<Hook> hooks;                         ///< leaf hooks (non-leaves keep them on grad_fn)
  std::vector<std::function<void(const Tensor&)>> post_accumulate_hooks;  ///< leaves: run after .grad is updated
  uint32_t output_nr = 0;  ///< which output of grad_fn this tensor is (nodes of Python Functions have several)
  // ---- in-place bookkeeping (frontend/src/autograd/inplace.cpp)
  std::shared_ptr<autograd::VersionCounter> version;  ///< the storage's version counter, once looked up
  const void* version_storage = nullptr;              ///< the storage `version` was looked up for
  std::shared_ptr<Impl> view_base;  ///< a view made by a view op: the tensor it views (never a view itself)
  uint32_t view_gen = 0;            ///< a view: the base's history_gen its grad_fn follows
  uint32_t history_gen = 0;         ///< bumped whenever an in-place op rewrites this tensor's history
  /** Releases h. */
  ~Impl() { gn_tensor_release(h); }
};

// ---------------------------------------------------------------- creation

/** 1-D tensor from numbers (float32 unless opts.dtype). */
Tensor tensor(std::initializer_list<double> values, Options opts = {});
/** 2-D tensor from rows (float32 unless opts.dtype). */
Tensor tensor(std::initializer_list<std::initializer_list<double>> rows, Options opts = {});
/** Tensor from float data and a shape (float32 unless opts.dtype). */
Tensor tensor(const std::vector<float>& values, Shape shape, Options opts = {});
/** Tensor from double data and a shape (float64 unless opts.dtype). */
Tensor tensor(const std::vector<double>& values, Shape shape, Options opts = {});
/** Tensor from int64 data and a shape (int64 unless opts.dtype). */
Tensor tensor(const std::vector<int64_t>& values, Shape shape, Options opts = {});
/** 0-d tensor holding v (float32 unless opts.dtype). */
Tensor scalar_tensor(double v, Options opts = {});
/** Uninitialised tensor. */
Tensor empty(Shape shape, Options opts = {});
/** All zeros. */
Tensor zeros(Shape shape, Options opts = {});
/** All ones. */
Tensor ones(Shape shape, Options opts = {});
/** Every element = value. */
Tensor full(Shape shape, double value, Options opts = {});
/** [0, end) by 1 (int64 unless opts.dtype). */
Tensor arange(double end, Options opts = {});
/** [start, end) by step; int64 when all are integral, else float32. */
Tensor arange(double start, double end, double step = 1, Options opts = {});
/** steps points from start to end inclusive. */
Tensor linspace(double start, double end, int64_t steps, Options opts = {});
/** n x m identity (m = n when 0). */
Tensor eye(int64_t n, int64_t m = 0, Options opts = {});
/** Uniform [0, 1). */
Tensor rand(Shape shape, Options opts = {});
/** Standard normal. */
Tensor randn(Shape shape, Options opts = {});
/** Uniform integers in [low, high) (int64 unless opts.dtype). */
Tensor randint(int64_t low, int64_t high, Shape shape, Options opts = {});
/** Zeros with t's shape, dtype and device (overridable). */
Tensor zeros_like(const Tensor& t, Options opts = {});
/** Ones like t. */
Tensor ones_like(const Tensor& t, Options opts = {});
/** value like t. */
Tensor full_like(const Tensor& t, double value, Options opts = {});
/** Uniform [0,1) like t. */
Tensor rand_like(const Tensor& t, Options opts = {});
/** Standard normal like t. */
Tensor randn_like(const Tensor& t, Options opts = {});
/** Random integers like t's shape. */
Tensor randint_like(const Tensor& t, int64_t low, int64_t high, Options opts = {});
/** Empty like t. */
Tensor empty_like(const Tensor& t, Options opts = {});

// ------------------------------------------------------- free-function ops

/** a @ b (torch.matmul). */
Tensor matmul(const Tensor& a, const Tensor& b);
/** cond ? a : b (broadcast). */
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
/** A one-input op by its ops.def name (any op, a new one too), recorded for autograd when
 * frontend/src/autograd/derivatives.def gives it a GN_UNARY_GRAD row. */
Tensor call_unary(const std::string& op, const Tensor& x);
/** Softmax along dim. */
Tensor softmax(const Tensor& x, int64_t dim);
/** Log-softmax along dim. */
Tensor log_softmax(const Tensor& x, int64_t dim);
/** Layer norm over the last normalized_ndim dims, with optional weight and bias. */
Tensor layer_norm(const Tensor& x, const Tensor& weight = {}, const Tensor& bias = {}, int64_t normalized_ndim = 1,
                  double eps = 1e-5);
/** RMS norm over the last dim, with optional weight. */
Tensor rms_norm(const Tensor& x, const Tensor& weight = {}, double eps = 1e-6);
/** Cross-entropy of logits (*, C) against int targets (*); reduction 0 none, 1 mean, 2 sum. */
Tensor cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index = -100,
                     double label_smoothing = 0, int64_t reduction = 1);
/** Rows of weight (V, D) picked by integer ids (*) -> (*, D). */
Tensor embedding(const Tensor& weight, const Tensor& ids);
/** Batched a (B,M,K) @ b (B,K,N) -> (B,M,N); trans_a: a is (B,K,M), trans_b: b is (B,N,K). */
Tensor bmm(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);
/** Copy of x with out[index[i][j]][j] = src[i][j] along dim (torch.scatter). */
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
/** Copy of x with out[index[i][j]][j] += src[i][j] along dim (torch.scatter_add). */
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
/** Copy of x with out.select(dim, index[i]) += alpha * src.select(dim, i) (torch.index_add). */
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, double alpha = 1);
/** int64 one-hot encoding (*, num_classes) of integer ids (*). */
Tensor one_hot(const Tensor& ids, int64_t num_classes);
/** Sums g over broadcast dims so that it has `shape`. */
Tensor sum_to_size(const Tensor& g, const Shape& shape);

// --------------------------------------------------------------- operators

Tensor operator-(const Tensor& a);                    ///< -a
Tensor operator+(const Tensor& a, const Tensor& b);   ///< a + b
Tensor operator-(const Tensor& a, const Tensor& b);   ///< a - b
Tensor operator*(const Tensor& a, const Tensor& b);   ///< a * b
Tensor operator/(const Tensor& a, const Tensor& b);   ///< a / b
Tensor operator+(const Tensor& a, const Scalar& b);   ///< a + number
Tensor operator-(const Tensor& a, const Scalar& b);   ///< a - number
Tensor operator*(const Tensor& a, const Scalar& b);   ///< a * number
Tensor operator/(const Tensor& a, const Scalar& b);   ///< a / number
Tensor operator+(const Scalar& a, const Tensor& b);   ///< number + b
Tensor operator-(const Scalar& a, const Tensor& b);   ///< number - b
Tensor operator*(const Scalar& a, const Tensor& b);   ///< number * b
Tensor operator/(const Scalar& a, const Tensor& b);   ///< number / b
Tensor operator==(const Tensor& a, const Tensor& b);  ///< bool a == b
Tensor operator!=(const Tensor& a, const Tensor& b);  ///< bool a != b
Tensor operator<(const Tensor& a, const Tensor& b);   ///< bool a < b
Tensor operator<=(const Tensor& a, const Tensor& b);  ///< bool a <= b
Tensor operator>(const Tensor& a, const Tensor& b);   ///< bool a > b
Tensor operator>=(const Tensor& a, const Tensor& b);  ///< bool a >= b
Tensor operator==(const Tensor& a, const Scalar& b);  ///< bool a == number
Tensor operator!=(const Tensor& a, const Scalar& b);  ///< bool a != number
Tensor operator<(const Tensor& a, const Scalar& b);   ///< bool a < number
Tensor operator<=(const Tensor& a, const Scalar& b);  ///< bool a <= number
Tensor operator>(const Tensor& a, const Scalar& b);   ///< bool a > number
Tensor operator>=(const Tensor& a, const Scalar& b);  ///< bool a >= number
Tensor& operator+=(Tensor& a, const Tensor& b);       ///< in place a += b
Tensor& operator-=(Tensor& a, const Tensor& b);       ///< in place a -= b
Tensor& operator*=(Tensor& a, const Tensor& b);       ///< in place a *= b

/** A 0-d wrapped-scalar tensor for s on device d (does not raise result dtypes). */
Tensor wrap_scalar(const Scalar& s, const Device& d);

/** Prints like PyTorch: tensor([[1., 2.],\n        [3., 4.]], requires_grad=True). */
std::ostream& operator<<(std::ostream& os, const Tensor& t);
/** The printed form as a string. */
std::string to_string(const Tensor& t);

}  // namespace genesis

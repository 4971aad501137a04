// frontend/src/distributed/fsdp.cpp - FullyShardedDataParallel (ZeRO-1/2/3)
// with a sharded AdamW.
//
// A parameter's data is swapped in place (its Tensor::Impl points at other
// storage, as nn::Module::to does), so the module's members, the autograd
// graph's leaves and this file always see one tensor:
//   * optimizer / grad_optimizer: each parameter is, for good, a view of its
//     unit's flat buffer, which the step's all-gather rewrites;
//   * full: a parameter holds no elements except while its unit is gathered,
//     when it is a view of a flat buffer all-gathered from the master shards.
//
// Per synchronised backward:
//   1. the first gradient hook (or a unit's pre-backward node) queues
//      finalize() to run when the backward ends;
//   2. when every parameter of a unit has its gradient, the unit's gradients
//      are copied into one padded flat tensor (and the .grad tensors dropped)
//      and all-reduced (optimizer) or reduce-scattered (the others) on the
//      group's worker, while backward goes on; a gathered unit (full) is
//      released at once;
//   3. finalize() launches the units left (their missing gradients count as
//      zeros), waits for every unit in order and adds the results into the
//      reduced gradient it keeps (full flat, or this rank's shard).
// Under no_sync the gradients only accumulate in .grad (full size), and
// finalize() only releases the gathered units.
//
// A saved tensor of the autograd graph holds its storage: a unit's buffer
// gathered for its forward lives on while the graph keeps views of it (there
// is no storage resize to free it from under them), so the memory the full
// strategy saves in a step is that of the units the graph does not reference:
// with activation checkpointing, every unit but the one running.
#include "genesis/distributed/fsdp.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <sstream>

#include "../internal.h"
#include "genesis/autograd.hpp"
#include "genesis/io.hpp"

namespace genesis::distributed {

namespace {

const char* kWho = "[FullyShardedDataParallel] ";

// Points t's Impl at src's data: every holder of t (the module's members, the graph's leaves) sees it.
void set_data(const Tensor& t, const Tensor& src) {
  gn_tensor* h = src.handle();
  gn_tensor_retain(h);
  gn_tensor_release(t.impl()->h);
  t.impl()->h = h;
}

int64_t bytes_of(const Tensor& t) {
  return t.defined() ? t.numel() * static_cast<int64_t>(gn_dtype_size(static_cast<int32_t>(t.dtype()))) : 0;
}

}  // namespace

ShardingStrategy sharding_strategy_from_string(const std::string& name) {
  if (name == "optimizer") return ShardingStrategy::optimizer;
  if (name == "grad_optimizer") return ShardingStrategy::grad_optimizer;
  if (name == "full") return ShardingStrategy::full;
  throw Error(GN_ERR_INVALID_ARGUMENT, std::string(kWho) + "unknown sharding strategy '" + name +
                                           "': expected optimizer, grad_optimizer or full");
}

const char* to_string(ShardingStrategy s) {
  switch (s) {
    case ShardingStrategy::optimizer: return "optimizer";
    case ShardingStrategy::grad_optimizer: return "grad_optimizer";
    case ShardingStrategy::full: return "full";
  }
  return "?";
}

struct FullyShardedDataParallel::State {
  ProcessGroup* group = nullptr;
  const FSDPOptions* opt = nullptr;
  const bool* sync = nullptr;
  int rank = 0, world = 1;

  struct Unit {
    std::string name;            // the module's dotted name ("" for the root unit)
    std::vector<Tensor> params;  // the leaves, in registration order
    std::vector<std::string> names;
    std::vector<Shape> shapes;
    std::vector<int64_t> offset, numel;
    int64_t total = 0, padded = 0, shard = 0;
    DType dtype = DType::f32;         // the parameters' while gathered (the compute dtype)
    DType module_dtype = DType::f32;  // the parameters' as the module made them
    DType mdtype = DType::f32;        // the master shard's and the AdamW state's
    Device device;
    Tensor master, exp_avg, exp_avg_sq;  // this rank's shard
    int64_t step = 0;
    Tensor flat;  // the whole parameters: replicated (optimizer, grad_optimizer) or gathered (full)
    bool gathered = false;
    Tensor prefetched, prefetch_src;  // an all-gather started early (full, prefetch)
    Work prefetch_work;
    Tensor grad_full;   // optimizer: the reduced gradients, whole (padded)
    Tensor grad_shard;  // grad_optimizer, full: this rank's shard of the reduced gradients
    // ---- one backward
    std::vector<bool> ready;
    size_t pending = 0;
    bool launched = false;
    Tensor comm_in, comm_out;
    Work work;
  };
  std::vector<Unit> units;
  NamedTensors buffers;      // broadcast from rank 0 before each forward, saved with the shards
  std::vector<int> unit_of;  // options.units / the constructor's lists -> unit index (-1: no parameters)
  bool armed = false;
  int skip_reduce = -1;  // $GENESIS_FSDP_SKIP_REDUCE: a unit whose first reduction is skipped (negative controls)
  std::weak_ptr<State> self;

  bool full() const { return opt->strategy == ShardingStrategy::full; }
  std::vector<int> build(const std::vector<std::pair<std::string, NamedTensors>>& lists);

  // Unit ui's forward: gathered (unless it is), the next unit prefetched, fn, released, and the
  // output made to gather the unit again before its backward.
  Tensor run_unit(size_t ui, const std::function<Tensor()>& fn) {
    if (!full()) return fn();
    Unit& u = units.at(ui);
    const bool was = u.gathered;
    gather(u);
    prefetch(ui + 1);  // the next unit, while this one computes
    Tensor y = fn();
    if (!was) release(u);
    if (autograd::grad_enabled() && y.defined() && y.requires_grad()) y = wrap(ui, y);
    return y;
  }

  // Elements [rank*shard, (rank+1)*shard) of a unit's flat tensor.
  Tensor my_chunk(const Unit& u, const Tensor& flat) const {
    return flat.slice(0, rank * u.shard, (rank + 1) * u.shard);
  }

  // The parameters become views of flat.
  void point(Unit& u, const Tensor& flat) {
    for (size_t k = 0; k < u.params.size(); ++k)
      set_data(u.params[k], flat.slice(0, u.offset[k], u.offset[k] + u.numel[k]).view(u.shapes[k]));
    u.flat = flat;
  }

  // The padded flat tensor of the whole parameters in dtype, all-gathered from the master shards.
  Tensor gather_flat(Unit& u, DType dtype) {
    NoGradGuard ng;
    Tensor flat = empty({u.padded}, Options{dtype, u.device});
    Tensor src = u.master.dtype() == dtype ? u.master : u.master.to(dtype);
    group->all_gather_into_tensor(flat, src);
    return flat;
  }

  void gather(Unit& u) {
    if (u.gathered) return;
    if (u.prefetched.defined()) {
      u.prefetch_work.wait();
      point(u, u.prefetched);
      u.prefetched = u.prefetch_src = Tensor();
      u.prefetch_work = Work();
    } else {
      point(u, gather_flat(u, u.dtype));
    }
    u.gathered = true;
  }

  // Starts all-gathering unit ui (when it is a unit of its own, not gathered and not under way):
  // the collective runs on the group's worker while the caller computes; gather() waits for it.
  void prefetch(size_t ui) {
    if (!full() || !opt->prefetch || ui >= units.size()) return;
    Unit& u = units[ui];
    if (u.name.empty() || u.gathered || u.prefetched.defined()) return;
    NoGradGuard ng;
    u.prefetched = empty({u.padded}, Options{u.dtype, u.device});
    u.prefetch_src = u.master.dtype() == u.dtype ? u.master : u.master.to(u.dtype);
    u.prefetch_work = group->all_gather_into_tensor(u.prefetched, u.prefetch_src, /*async_op=*/true);
  }

  // Waits for and drops a prefetch that was not used (before the master shards change).
  void drop_prefetch(Unit& u) {
    if (!u.prefetched.defined()) return;
    u.prefetch_work.wait();
    u.prefetched = u.prefetch_src = Tensor();
    u.prefetch_work = Work();
  }

  void release(Unit& u) {
    if (!full() || !u.gathered) return;
    const Tensor none = empty({0}, Options{u.dtype, u.device});
    for (const Tensor& p : u.params) set_data(p, none);
    u.flat = Tensor();
    u.gathered = false;
  }

  void arm() {
    if (armed) return;
    armed = true;
    for (Unit& u : units) {
      u.ready.assign(u.params.size(), false);
      u.pending = u.params.size();
      u.launched = false;
      u.comm_in = u.comm_out = Tensor();
      u.work = Work();
    }
    std::weak_ptr<State> weak = self;
    autograd::queue_callback([weak] {
      if (auto s = weak.lock()) s->finalize();
    });
  }

  void on_grad(size_t ui, size_t k) {
    arm();
    if (!*sync) return;  // no_sync: gradients only accumulate
    Unit& u = units[ui];
    if (u.ready[k]) return;
    u.ready[k] = true;
    if (--u.pending == 0) launch(ui);
  }

  void launch(size_t ui) {
    Unit& u = units[ui];
    NoGradGuard ng;
    const Options o{u.dtype, u.device};
    Tensor g = zeros({u.padded}, o);
    for (size_t k = 0; k < u.params.size(); ++k) {
      const Tensor& p = u.params[k];
      Tensor pg = p.grad();
      if (pg.defined()) g.slice(0, u.offset[k], u.offset[k] + u.numel[k]).copy_(pg.reshape({u.numel[k]}));
      p.set_grad(Tensor());
    }
    const ReduceOp op = opt->average ? ReduceOp::avg : ReduceOp::sum;
    u.launched = true;
    if (skip_reduce == static_cast<int>(ui)) {  // a negative control: this rank's own gradient, unreduced
      skip_reduce = -1;
      u.comm_out = opt->strategy == ShardingStrategy::optimizer ? g : my_chunk(u, g).clone();
      u.work = Work();
    } else if (opt->strategy == ShardingStrategy::optimizer) {
      u.comm_out = g;
      u.work = group->all_reduce(u.comm_out, op, /*async_op=*/true);
    } else {
      u.comm_in = g;
      u.comm_out = empty({u.shard}, o);
      u.work = group->reduce_scatter_tensor(u.comm_out, u.comm_in, op, /*async_op=*/true);
    }
    release(u);  // its backward is over
  }

  void finalize() {
    armed = false;
    if (*sync) {
      for (size_t ui = 0; ui < units.size(); ++ui)
        if (!units[ui].launched) launch(ui);
      NoGradGuard ng;
      for (Unit& u : units) {
        u.work.wait();
        Tensor& acc = opt->strategy == ShardingStrategy::optimizer ? u.grad_full : u.grad_shard;
        if (acc.defined())
          acc.add_(u.comm_out);
        else
          acc = u.comm_out;
        u.comm_in = u.comm_out = Tensor();
        u.work = Work();
      }
    }
    for (Unit& u : units) release(u);
  }

  // The reduced gradient of this rank's shard (undefined before any synchronised backward).
  Tensor grad_of_shard(const Unit& u) const {
    if (opt->strategy == ShardingStrategy::optimizer)
      return u.grad_full.defined() ? my_chunk(u, u.grad_full) : Tensor();
    return u.grad_shard;
  }

  // The unit's output gathers the unit again before its backward.
  Tensor wrap(size_t ui, const Tensor& y) {
    std::vector<Tensor> outs{y};
    std::weak_ptr<State> weak = self;
    autograd::record_function("FSDPPreBackward", {y}, outs, {},
                              [weak, ui](autograd::Node&, std::vector<Tensor>& grads) {
                                if (auto s = weak.lock()) {
                                  s->arm();
                                  s->gather(s->units[ui]);
                                  if (ui > 0) s->prefetch(ui - 1);  // backward runs the units in reverse
                                }
                                return std::vector<Tensor>{grads[0]};
                              });
    return outs[0];
  }
};

namespace {

// Module -> (its FSDP's state, unit index), for unit_forward.
std::mutex g_registry_mu;
std::map<const nn::Module*, std::pair<std::weak_ptr<FullyShardedDataParallel::State>, size_t>> g_registry;

}  // namespace

namespace {

// Starts a State: the options checked, the group, rank 0's parameters and buffers everywhere.
void start(FullyShardedDataParallel::State& s, const std::shared_ptr<FullyShardedDataParallel::State>& self,
           ProcessGroup* group, const FSDPOptions* opt, const bool* sync, const NamedTensors& params,
           const NamedTensors& buffers) {
  s.self = self;
  s.group = group ? group : &world();
  s.opt = opt;
  s.sync = sync;
  s.rank = s.group->rank();
  s.world = s.group->size();
  if (const char* e = std::getenv("GENESIS_FSDP_SKIP_REDUCE"); e && *e) s.skip_reduce = std::atoi(e);
  if (opt->param_dtype && !is_floating(*opt->param_dtype))
    throw Error(GN_ERR_INVALID_ARGUMENT,
                std::string(kWho) + "param_dtype must be a floating dtype, got " + dtype_name(*opt->param_dtype));
  s.buffers = buffers;
  NoGradGuard ng;
  for (const auto& list : {params, buffers})
    for (const auto& [name, t] : list) {
      Tensor x = t;
      s.group->broadcast(x, 0);
    }
}

}  // namespace

// Lays out the units (lists of named parameters; those not requiring grad stay as they are), keeps
// this rank's master shards and hooks every parameter.  Returns each list's unit index (-1: none).
std::vector<int> FullyShardedDataParallel::State::build(
    const std::vector<std::pair<std::string, NamedTensors>>& lists) {
  std::vector<int> index;
  std::map<const Tensor::Impl*, std::string> taken;
  for (const auto& [uname, params] : lists) {
    Unit u;
    u.name = uname;
    for (const auto& [pname, p] : params) {
      if (!p.defined() || !p.requires_grad()) continue;
      auto [it, fresh] = taken.emplace(p.impl().get(), pname);
      if (!fresh) {
        if (uname.empty()) continue;  // the root unit: every parameter no other unit has
        throw Error(GN_ERR_INVALID_ARGUMENT, std::string(kWho) + "units overlap: '" + pname + "' is in two of them");
      }
      if (!p.is_leaf())
        throw Error(GN_ERR_INVALID_ARGUMENT, std::string(kWho) + "parameter " + pname + " is not a leaf");
      if (!u.params.empty() && (p.dtype() != u.module_dtype || !(p.device() == u.device)))
        throw Error(GN_ERR_INVALID_ARGUMENT, std::string(kWho) + "unit '" + uname +
                                                 "' mixes dtypes or devices: its parameters must have one of each");
      u.module_dtype = p.dtype();
      u.device = p.device();
      u.params.push_back(p);
      u.names.push_back(pname);
      u.shapes.push_back(p.shape());
      u.offset.push_back(u.total);
      u.numel.push_back(p.numel());
      u.total += p.numel();
    }
    if (u.params.empty()) {
      index.push_back(-1);
      continue;
    }
    if (!is_floating(u.module_dtype))
      throw Error(GN_ERR_INVALID_ARGUMENT, std::string(kWho) + "unit '" + uname + "' has non-floating parameters");
    u.padded = (u.total + world - 1) / world * world;
    u.shard = u.padded / world;
    u.mdtype = u.module_dtype == DType::f64 ? DType::f64 : DType::f32;
    u.dtype = opt->param_dtype ? *opt->param_dtype : u.module_dtype;
    index.push_back(static_cast<int>(units.size()));
    units.push_back(std::move(u));
  }
  // Master shards (and the replicated flat buffers of optimizer and grad_optimizer).
  {
    NoGradGuard ng;
    for (Unit& u : units) {
      Tensor flat = zeros({u.padded}, Options{u.module_dtype, u.device});
      for (size_t k = 0; k < u.params.size(); ++k)
        flat.slice(0, u.offset[k], u.offset[k] + u.numel[k]).copy_(u.params[k].detach().reshape({u.numel[k]}));
      u.master = my_chunk(u, flat).to(u.mdtype).clone();
      point(u, u.dtype == u.module_dtype ? flat : flat.to(u.dtype));
      u.gathered = true;
      release(u);
    }
  }
  // Gradient hooks, holding the state weakly (the FSDP may die first).
  for (size_t ui = 0; ui < units.size(); ++ui)
    for (size_t k = 0; k < units[ui].params.size(); ++k) {
      std::weak_ptr<State> weak = self;
      units[ui].params[k].register_post_accumulate_grad_hook([weak, ui, k](const Tensor&) {
        if (auto st = weak.lock()) st->on_grad(ui, k);
      });
    }
  return index;
}

FullyShardedDataParallel::FullyShardedDataParallel(nn::Module& module, FSDPOptions options, ProcessGroup* group)
    : module_(&module), opt_(std::move(options)), state_(std::make_shared<State>()) {
  State& s = *state_;
  start(s, state_, group, &opt_, &sync_, module.named_parameters(), module.named_buffers());
  // The named modules' parameters, then the root unit with every other one.
  std::map<const Tensor::Impl*, std::string> name_of;
  for (auto& [name, p] : module.named_parameters()) name_of[p.impl().get()] = name;
  std::map<const nn::Module*, std::string> module_name;
  for (auto& [name, m] : module.named_modules()) module_name[m] = name;
  std::vector<std::pair<std::string, NamedTensors>> lists;
  for (nn::Module* m : opt_.units) {
    auto it = module_name.find(m);
    if (!m || it == module_name.end())
      throw Error(GN_ERR_INVALID_ARGUMENT, std::string(kWho) + "a unit is not a submodule of the wrapped module");
    NamedTensors params;
    for (const Tensor& p : m->parameters()) params.emplace_back(name_of[p.impl().get()], p);
    lists.emplace_back(it->second.empty() ? "<root>" : it->second, params);
  }
  lists.emplace_back("", module.named_parameters());
  s.unit_of = s.build(lists);
  std::lock_guard<std::mutex> lock(g_registry_mu);
  for (size_t k = 0; k < opt_.units.size(); ++k)
    if (s.unit_of[k] >= 0) g_registry[opt_.units[k]] = {state_, static_cast<size_t>(s.unit_of[k])};
}

FullyShardedDataParallel::FullyShardedDataParallel(const std::vector<std::pair<std::string, NamedTensors>>& units,
                                                   const NamedTensors& buffers, FSDPOptions options,
                                                   ProcessGroup* group)
    : opt_(std::move(options)), state_(std::make_shared<State>()) {
  NamedTensors all;
  for (const auto& [uname, params] : units) all.insert(all.end(), params.begin(), params.end());
  start(*state_, state_, group, &opt_, &sync_, all, buffers);
  state_->unit_of = state_->build(units);
}

FullyShardedDataParallel::~FullyShardedDataParallel() {
  {
    std::lock_guard<std::mutex> lock(g_registry_mu);
    for (auto it = g_registry.begin(); it != g_registry.end();)
      it = it->second.first.lock() == state_ ? g_registry.erase(it) : std::next(it);
  }
  for (State::Unit& u : state_->units) {
    try {  // the worker may still write into a prefetch buffer
      state_->drop_prefetch(u);
    } catch (const std::exception&) {
    }
  }
  // No new collective here (a rank unwinding an error must not wait for the others): under full,
  // the parameters stay without elements; full_state_dict() before this keeps them.
}

size_t FullyShardedDataParallel::num_units() const { return state_->units.size(); }
int64_t FullyShardedDataParallel::unit_numel(size_t k) const { return state_->units.at(k).padded; }
int64_t FullyShardedDataParallel::steps() const { return state_->units.empty() ? 0 : state_->units.front().step; }

void FullyShardedDataParallel::prepare_forward() {
  NoGradGuard ng;
  for (auto& [name, b] : state_->buffers) {
    Tensor t = b;
    state_->group->broadcast(t, 0);
  }
  if (state_->full() && !state_->units.empty() && state_->units.back().name.empty())
    state_->gather(state_->units.back());
}

Tensor FullyShardedDataParallel::forward(const Tensor& x) {
  prepare_forward();
  return finish_forward(module().forward(x));
}

Tensor FullyShardedDataParallel::finish_forward(const Tensor& y) {
  State& s = *state_;
  if (s.full() && !s.units.empty() && s.units.back().name.empty() && autograd::grad_enabled() && y.defined() &&
      y.requires_grad())
    return s.wrap(s.units.size() - 1, y);
  return y;
}

Tensor FullyShardedDataParallel::unit_forward(size_t k, const std::function<Tensor()>& fn) {
  if (k >= state_->unit_of.size())
    throw Error(GN_ERR_INVALID_ARGUMENT, std::string(kWho) + "unit_forward: no unit " + std::to_string(k));
  const int ui = state_->unit_of[k];
  return ui < 0 ? fn() : state_->run_unit(static_cast<size_t>(ui), fn);
}

nn::Module& FullyShardedDataParallel::module() {
  if (!module_)
    throw Error(GN_ERR_INVALID_ARGUMENT, std::string(kWho) + "built over parameter lists: there is no module");
  return *module_;
}

double FullyShardedDataParallel::clip_grad_norm_(double max_norm) {
  State& s = *state_;
  NoGradGuard ng;
  double local = 0;
  for (const State::Unit& u : s.units) {
    Tensor g = s.grad_of_shard(u);
    if (g.defined()) local += g.to(DType::f64).square().sum().item<double>();
  }
  Tensor t = genesis::full({1}, local, Options{DType::f64, s.group->device()});
  s.group->all_reduce(t, ReduceOp::sum);
  const double norm = std::sqrt(t.item<double>());
  const double coef = std::min(max_norm / (norm + 1e-6), 1.0);
  for (State::Unit& u : s.units) {
    Tensor g = s.grad_of_shard(u);
    if (g.defined()) g.mul_(coef);
  }
  return norm;
}

void FullyShardedDataParallel::step() {
  State& s = *state_;
  NoGradGuard ng;
  const gn_op* op = GN_OP_HANDLE("adamw_step");
  for (State::Unit& u : s.units) {
    s.release(u);
    s.drop_prefetch(u);
    Tensor g = s.grad_of_shard(u);
    if (!g.defined()) continue;
    if (g.dtype() != u.mdtype) g = g.to(u.mdtype);
    if (!u.exp_avg.defined()) u.exp_avg = zeros_like(u.master), u.exp_avg_sq = zeros_like(u.master);
    ++u.step;
    detail::call(op, {&u.master, &g, &u.exp_avg, &u.exp_avg_sq},
                 {gn_attr_float(opt_.lr), gn_attr_float(opt_.beta1), gn_attr_float(opt_.beta2), gn_attr_float(opt_.eps),
                  gn_attr_float(opt_.weight_decay), gn_attr_int(u.step), gn_attr_int(1), gn_attr_int(0)},
                 0);
    if (!s.full()) {
      Tensor src = u.master.dtype() == u.dtype ? u.master : u.master.to(u.dtype);
      s.group->all_gather_into_tensor(u.flat, src);
    }
  }
}

void FullyShardedDataParallel::zero_grad() {
  for (State::Unit& u : state_->units) {
    u.grad_full = u.grad_shard = Tensor();
    for (const Tensor& p : u.params) p.set_grad(Tensor());
  }
}

std::map<std::string, Tensor> FullyShardedDataParallel::full_state_dict() {
  State& s = *state_;
  NoGradGuard ng;
  std::map<std::string, Tensor> whole;
  for (State::Unit& u : s.units) {
    Tensor flat = s.gather_flat(u, u.module_dtype);
    for (size_t k = 0; k < u.params.size(); ++k)
      whole[u.names[k]] = flat.slice(0, u.offset[k], u.offset[k] + u.numel[k]).view(u.shapes[k]).clone();
  }
  if (!module_) {
    for (const auto& [name, b] : s.buffers) whole[name] = b;
    return whole;
  }
  std::map<std::string, Tensor> out;
  for (const auto& [name, t] : module_->state_dict()) {
    auto it = whole.find(name);
    out[name] = it != whole.end() ? it->second : t;
  }
  return out;
}

FullyShardedDataParallel::Memory FullyShardedDataParallel::memory() const {
  Memory m;
  for (const State::Unit& u : state_->units) {
    m.params += bytes_of(u.flat) + bytes_of(u.prefetched);
    m.master += bytes_of(u.master);
    m.grads += bytes_of(u.grad_full) + bytes_of(u.grad_shard);
    for (const Tensor& p : u.params) m.grads += bytes_of(p.grad());
    m.optimizer_state += bytes_of(u.exp_avg) + bytes_of(u.exp_avg_sq);
  }
  return m;
}

// ---- sharded checkpoints

namespace {

std::string shard_file(const std::string& dir, int r, int n) {
  return dir + "/shard-" + std::to_string(r) + "-of-" + std::to_string(n) + ".safetensors";
}

}  // namespace

void FullyShardedDataParallel::save_sharded(const std::string& dir) {
  State& s = *state_;
  NoGradGuard ng;
  std::exception_ptr err;
  try {
    if (s.rank == 0) std::filesystem::create_directories(dir);
  } catch (...) {
    err = std::current_exception();
  }
  s.group->barrier();
  if (err) std::rethrow_exception(err);
  try {
    TensorMap tensors;
    StringMap meta{{"world_size", std::to_string(s.world)}, {"units", std::to_string(s.units.size())}};
    for (size_t ui = 0; ui < s.units.size(); ++ui) {
      const State::Unit& u = s.units[ui];
      const std::string p = "unit" + std::to_string(ui) + ".";
      tensors[p + "master"] = u.master;
      if (u.exp_avg.defined()) tensors[p + "exp_avg"] = u.exp_avg, tensors[p + "exp_avg_sq"] = u.exp_avg_sq;
      meta[p + "total"] = std::to_string(u.total);
      meta[p + "step"] = std::to_string(u.step);
    }
    save_safetensors(shard_file(dir, s.rank, s.world), tensors, meta);
    if (s.rank == 0) {
      TensorMap buffers;
      for (auto& [name, b] : s.buffers) buffers[name] = b;
      save_safetensors(dir + "/buffers.safetensors", buffers, {});
      std::ostringstream js;
      js << "{\n  \"format\": \"genesis-fsdp-shards\",\n  \"world_size\": " << s.world << ",\n  \"strategy\": \""
         << to_string(opt_.strategy) << "\",\n  \"units\": [";
      for (size_t ui = 0; ui < s.units.size(); ++ui) {
        const State::Unit& u = s.units[ui];
        js << (ui ? "," : "") << "\n    {\"name\": \"" << u.name << "\", \"dtype\": \"" << dtype_name(u.module_dtype)
           << "\", \"param_dtype\": \"" << dtype_name(u.dtype) << "\", \"master_dtype\": \"" << dtype_name(u.mdtype)
           << "\", \"numel\": " << u.total << ", \"padded\": " << u.padded << ", \"shard\": " << u.shard
           << ", \"step\": " << u.step << ", \"params\": [";
        for (size_t k = 0; k < u.params.size(); ++k) {
          js << (k ? ", " : "") << "{\"name\": \"" << u.names[k] << "\", \"offset\": " << u.offset[k]
             << ", \"shape\": [";
          for (size_t d = 0; d < u.shapes[k].size(); ++d) js << (d ? ", " : "") << u.shapes[k][d];
          js << "]}";
        }
        js << "]}";
      }
      js << "\n  ]\n}\n";
      atomic_write_file(dir + "/manifest.json", js.str());
    }
  } catch (...) {
    err = std::current_exception();
  }
  s.group->barrier();  // nobody reads the checkpoint before every shard is in place
  if (err) std::rethrow_exception(err);
}

void FullyShardedDataParallel::load_sharded(const std::string& dir) {
  State& s = *state_;
  NoGradGuard ng;
  std::string first;  // shard 0 of the saved world size
  if (std::filesystem::is_directory(dir))
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      const std::string f = e.path().filename().string();
      if (f.rfind("shard-0-of-", 0) == 0 && f.size() > 12 && f.find(".safetensors") != std::string::npos)
        first = e.path().string();
    }
  if (first.empty()) throw Error(GN_ERR_IO, std::string(kWho) + "no shard-0-of-N.safetensors in " + dir);
  const StringMap meta0 = load_safetensors_metadata(first);
  const int old_world = std::stoi(meta0.at("world_size"));
  if (std::stoul(meta0.at("units")) != s.units.size())
    throw Error(GN_ERR_INVALID_ARGUMENT, std::string(kWho) + dir + " holds " + meta0.at("units") +
                                             " units, the model has " + std::to_string(s.units.size()));
  std::map<int, SafetensorsFile> files;  // old shards read so far
  auto file = [&](int j) -> const SafetensorsFile& {
    auto it = files.find(j);
    if (it == files.end())
      it = files.emplace(j, load_safetensors(shard_file(dir, j, old_world), s.group->device())).first;
    return it->second;
  };
  for (size_t ui = 0; ui < s.units.size(); ++ui) {
    State::Unit& u = s.units[ui];
    const std::string p = "unit" + std::to_string(ui) + ".";
    const int64_t total = std::stoll(meta0.at(p + "total"));
    if (total != u.total)
      throw Error(GN_ERR_INVALID_ARGUMENT, std::string(kWho) + "unit " + std::to_string(ui) + " of " + dir + " has " +
                                               std::to_string(total) + " elements, the model's " +
                                               std::to_string(u.total));
    const int64_t old_shard = (total + old_world - 1) / old_world;
    const bool has_state = file(0).tensors.count(p + "exp_avg") > 0;
    // This rank's new range [lo, hi) of the unpadded elements, cut from the old shards that overlap it.
    auto cut = [&](const std::string& what) {
      Tensor out = zeros({u.shard}, Options{u.mdtype, u.device});
      const int64_t lo = s.rank * u.shard, hi = std::min(lo + u.shard, total);
      for (int64_t a = lo; a < hi;) {
        const int j = static_cast<int>(a / old_shard);
        const int64_t b = std::min(hi, (j + 1) * old_shard);
        const Tensor& src = file(j).tensors.at(p + what);
        out.slice(0, a - lo, b - lo).copy_(src.slice(0, a - j * old_shard, b - j * old_shard));
        a = b;
      }
      return out;
    };
    u.master = cut("master");
    u.exp_avg = has_state ? cut("exp_avg") : Tensor();
    u.exp_avg_sq = has_state ? cut("exp_avg_sq") : Tensor();
    u.step = std::stoll(meta0.at(p + "step"));
    u.grad_full = u.grad_shard = Tensor();
    s.release(u);
    s.drop_prefetch(u);
    if (!s.full()) {
      Tensor src = u.master.dtype() == u.dtype ? u.master : u.master.to(u.dtype);
      s.group->all_gather_into_tensor(u.flat, src);
    }
  }
  const TensorMap buffers = load_safetensors(dir + "/buffers.safetensors", s.group->device()).tensors;
  for (auto& [name, b] : s.buffers) {
    auto it = buffers.find(name);
    if (it != buffers.end()) {
      Tensor t = b;
      t.copy_(it->second);
    }
  }
}

Tensor unit_forward(nn::Module& unit, const std::function<Tensor()>& fn) {
  std::shared_ptr<FullyShardedDataParallel::State> s;
  size_t ui = 0;
  {
    std::lock_guard<std::mutex> lock(g_registry_mu);
    auto it = g_registry.find(&unit);
    if (it != g_registry.end()) s = it->second.first.lock(), ui = it->second.second;
  }
  return s ? s->run_unit(ui, fn) : fn();
}

}  // namespace genesis::distributed

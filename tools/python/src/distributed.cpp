// tools/python/src/distributed.cpp - genesis.distributed's C++ side: the
// default process group, sub-groups and their collectives (async ones return
// a Work), rank-aware logging, DistributedSampler, and the C++ DDP reducer
// driven by a module written in Python.
//
// Ranks here are group ranks; the Python layer (genesis/distributed.py) takes
// torch's global ranks and converts.  A `group` argument of None means the
// world group.  Every blocking call releases the GIL.
//
// DDP and Python modules.  The C++ DistributedDataParallel wraps an
// nn::Module: it broadcasts its parameters, hooks each one
// (register_post_accumulate_grad_hook) and writes the averages into their
// .grad.  A Python nn.Module is not an nn::Module, so PythonDDP builds a
// mirror: an nn::Module tree with the same dotted names whose parameters share
// the Python parameters' data.  nn::Module::register_parameter stores a
// detached handle (its own autograd state), while autograd accumulates into
// the Python parameter, so the two are tied together:
//   - a post-accumulate hook on each Python parameter hands its .grad to the
//     mirror and runs the mirror's hooks (the reducer's), so each bucket's
//     all-reduce starts as soon as backward produced it, exactly as in C++;
//   - a callback queued after the reducer's end-of-backward one hands the
//     averaged gradients back to the Python parameters.
// The Python parameters keep their identity, so an optimizer made before the
// wrapper keeps working.
#include <map>
#include <memory>
#include <unordered_set>

#include "bind.h"
#include "genesis/autograd.hpp"
#include "genesis/distributed.hpp"
#include "genesis/distributed/ddp.hpp"
#include "genesis/distributed/fsdp.hpp"
#include "genesis/nn/module.hpp"

namespace genesis::python {
namespace {

namespace dist = genesis::distributed;

// Bumped by every init/destroy made from Python: a DDP built on the world group checks that the
// world it captured still exists before communicating.
int g_world_generation = 0;

dist::ProcessGroup& group_or_world(dist::ProcessGroup* g) { return g ? *g : dist::world(); }

// An empty nn::Module holding the mirror's parameters, buffers and children.
struct MirrorModule : nn::Module {
  std::string name() const override { return "PythonModule"; }
};

class PythonDDP {
 public:
  PythonDDP(const std::vector<std::pair<std::string, Tensor>>& params,
            const std::vector<std::pair<std::string, Tensor>>& buffers, dist::DDPOptions options,
            std::shared_ptr<dist::ProcessGroup> group)
      : group_(std::move(group)), generation_(g_world_generation) {
    root_ = std::make_shared<MirrorModule>();
    std::unordered_set<const Tensor::Impl*> seen;  // tied parameters once, as named_parameters does
    for (const auto& [name, p] : params) {
      if (!p.defined() || !seen.insert(p.impl().get()).second) continue;
      auto [owner, leaf] = node_for(name);
      Tensor mirror = owner->register_parameter(leaf, p, p.requires_grad());
      if (!p.requires_grad()) continue;
      if (!p.is_leaf())
        throw Error(GN_ERR_INVALID_ARGUMENT, "[DistributedDataParallel] parameter " + name + " is not a leaf");
      user_.push_back(p);
      mirror_.push_back(mirror);
    }
    for (const auto& [name, b] : buffers) {
      if (!b.defined()) continue;
      auto [owner, leaf] = node_for(name);
      owner->register_buffer(leaf, b);
    }
    ddp_ = std::make_unique<dist::DistributedDataParallel>(*root_, options, group_.get());
    // The reducer hooked the mirror's parameters; autograd reaches the Python ones.
    std::weak_ptr<State> weak = state_;
    state_->self = this;
    for (size_t i = 0; i < user_.size(); ++i) {
      user_[i].register_post_accumulate_grad_hook([weak, i](const Tensor& leaf) {
        auto s = weak.lock();
        if (!s || !s->self) return;
        s->self->on_grad(i, leaf);
      });
    }
  }
  ~PythonDDP() { state_->self = nullptr; }
  PythonDDP(const PythonDDP&) = delete;
  PythonDDP& operator=(const PythonDDP&) = delete;

  // Before forward: a fresh backward state, and rank 0's buffers everywhere (broadcast_buffers).
  void prepare_forward(const std::vector<Tensor>& buffers, bool broadcast) {
    check_group();
    armed_ = false;
    if (!broadcast) return;
    NoGradGuard ng;
    dist::ProcessGroup& g = group_or_world(group_.get());
    for (Tensor b : buffers) g.broadcast(b, 0);
  }

  // All-reduces the current gradients now (a rank with nothing to backward in a step).
  void reduce_gradients() {
    check_group();
    to_mirror();
    ddp_->reduce_gradients();
    from_mirror();
  }

  void set_sync(bool on) {
    if (on)
      no_sync_.reset();
    else if (!no_sync_)
      no_sync_ = std::make_unique<dist::DistributedDataParallel::NoSyncGuard>(*ddp_);
  }
  bool sync() const { return !no_sync_; }
  std::vector<std::string> unused_parameters() const { return ddp_->unused_parameters(); }
  std::vector<std::vector<size_t>> bucket_indices() const { return ddp_->bucket_indices(); }

 private:
  struct State {
    PythonDDP* self = nullptr;  // cleared when the wrapper dies (the hooks outlive it)
  };

  // The mirror module of a dotted name's owner, and the last component.
  std::pair<nn::Module*, std::string> node_for(const std::string& dotted) {
    nn::Module* node = root_.get();
    std::string path;
    size_t start = 0;
    for (size_t dot; (dot = dotted.find('.', start)) != std::string::npos; start = dot + 1) {
      const std::string part = dotted.substr(start, dot - start);
      path += (path.empty() ? "" : ".") + part;
      auto it = children_.find(path);
      if (it == children_.end()) {
        auto child = std::make_shared<MirrorModule>();
        node->register_module(part, child);
        it = children_.emplace(path, child.get()).first;
      }
      node = it->second;
    }
    return {node, dotted.substr(start)};
  }

  void check_group() const {
    if (group_) return;
    if (!dist::is_initialized() || generation_ != g_world_generation)
      throw Error(GN_ERR_ABORTED, "[DistributedDataParallel] the process group it was built on was destroyed");
  }

  // The mirror sees the Python parameters' data and gradients (data may have been re-pointed by
  // `p.data = ...`, gradients replaced or cleared by zero_grad).
  void to_mirror(size_t i) {
    Tensor::Impl& u = *user_[i].impl();
    Tensor::Impl& m = *mirror_[i].impl();
    if (m.h != u.h) {
      gn_tensor_retain(u.h);
      gn_tensor_release(m.h);
      m.h = u.h;
    }
    m.grad = u.grad;
  }
  void to_mirror() {
    for (size_t i = 0; i < user_.size(); ++i) to_mirror(i);
  }
  void from_mirror() {
    for (size_t i = 0; i < user_.size(); ++i) user_[i].impl()->grad = mirror_[i].impl()->grad;
  }

  void on_grad(size_t i, const Tensor& leaf) {
    (void)leaf;
    const bool first = !armed_;
    if (first) {
      check_group();
      to_mirror();
    } else {
      to_mirror(i);
    }
    for (const auto& h : mirror_[i].impl()->post_accumulate_hooks) h(mirror_[i]);
    if (first) {
      // Queued after the reducer's end-of-backward callback (which the hooks above queued).
      armed_ = true;
      std::weak_ptr<State> weak = state_;
      autograd::queue_callback([weak] {
        auto s = weak.lock();
        if (!s || !s->self) return;
        s->self->armed_ = false;
        s->self->from_mirror();
      });
    }
  }

  std::shared_ptr<dist::ProcessGroup> group_;  // null: the world group
  int generation_;
  std::shared_ptr<MirrorModule> root_;
  std::map<std::string, nn::Module*> children_;         // by dotted path (owned through root_)
  std::vector<Tensor> user_, mirror_;                   // parameters that require grad, in order
  std::unique_ptr<dist::DistributedDataParallel> ddp_;  // declared after root_: destroyed first
  std::unique_ptr<dist::DistributedDataParallel::NoSyncGuard> no_sync_;
  std::shared_ptr<State> state_ = std::make_shared<State>();
  bool armed_ = false;  // a backward is under way (its first hook ran)
};

// FullyShardedDataParallel over a Python module's parameters (shared with Python: their data is
// swapped in place), with its no_sync state as a property.
struct PythonFSDP {
  std::shared_ptr<dist::ProcessGroup> group;  // null: the world group
  std::unique_ptr<dist::FullyShardedDataParallel> fsdp;
  std::unique_ptr<dist::FullyShardedDataParallel::NoSyncGuard> no_sync;
  bool sync() const { return !no_sync; }
  void set_sync(bool on) {
    if (on)
      no_sync.reset();
    else if (!no_sync)
      no_sync = std::make_unique<dist::FullyShardedDataParallel::NoSyncGuard>(*fsdp);
  }
};

}  // namespace

void bind_distributed(py::module_& m) {
  py::module_ d = m.def_submodule("distributed", "genesis.distributed's C++ side (group ranks; None = world)");
  py::enum_<dist::ReduceOp>(d, "ReduceOp", "Reduction of all_reduce and reduce_scatter_tensor")
      .value("SUM", dist::ReduceOp::sum)
      .value("AVG", dist::ReduceOp::avg)
      .value("PRODUCT", dist::ReduceOp::prod)
      .value("MIN", dist::ReduceOp::min)
      .value("MAX", dist::ReduceOp::max);

  py::class_<dist::Work>(d, "Work", "A pending collective (async_op=True)")
      .def(
          "wait",
          [](dist::Work& w, py::handle timeout) {
            (void)timeout;
            py::gil_scoped_release nogil;
            w.wait();
            return true;
          },
          py::arg("timeout") = py::none(), "Blocks until the collective is done and raises its error; returns True")
      .def("is_completed", &dist::Work::is_completed, "True once finished (successfully or not)");

  py::class_<dist::ProcessGroup, std::shared_ptr<dist::ProcessGroup>>(d, "ProcessGroup",
                                                                      "A communicator over a set of ranks")
      .def("rank", &dist::ProcessGroup::rank, "This process's rank in the group")
      .def("size", &dist::ProcessGroup::size, "Number of ranks in the group")
      .def_property_readonly("ranks", &dist::ProcessGroup::ranks, "Global ranks of the members, in group order")
      .def("backend", &dist::ProcessGroup::backend)
      .def("abort", &dist::ProcessGroup::abort, "Pending and later calls fail at once")
      .def("__repr__", [](const dist::ProcessGroup& g) {
        return "<ProcessGroup " + g.backend() + " rank " + std::to_string(g.rank()) + " of " +
               std::to_string(g.size()) + ">";
      });

  // ---- the default group
  d.def(
      "init_process_group",
      [](const std::string& backend, const std::string& device, int rank, int world_size,
         const std::string& master_addr, int master_port, int64_t timeout_ms) {
        dist::InitOptions o;
        o.backend = backend;
        o.device = device;
        o.rank = rank;
        o.world_size = world_size;
        o.master_addr = master_addr;
        o.master_port = master_port;
        o.timeout = std::chrono::milliseconds(timeout_ms);
        {
          py::gil_scoped_release nogil;  // the rendezvous waits for every rank
          dist::init_process_group(o);
        }
        ++g_world_generation;
      },
      py::arg("backend") = "", py::arg("device") = "", py::arg("rank") = -1, py::arg("world_size") = -1,
      py::arg("master_addr") = "", py::arg("master_port") = -1, py::arg("timeout_ms") = -1);
  d.def("destroy_process_group", [] {
    {
      py::gil_scoped_release nogil;
      dist::destroy_process_group();
    }
    ++g_world_generation;
  });
  d.def("is_initialized", &dist::is_initialized);
  d.def("get_rank", &dist::get_rank);
  d.def("get_world_size", &dist::get_world_size);
  d.def("local_rank", &dist::local_rank);
  d.def("local_world_size", &dist::local_world_size);
  d.def("world_backend", [] { return dist::world().backend(); });
  d.def(
      "backend_for",
      [](const std::string& device_type) -> py::object {
        const char* b = gn_comm_backend_for(runtime(), device_type.c_str());
        if (!b) return py::none();
        return py::str(b);
      },
      py::arg("device_type"), "The communicator plugin serving this device type, or None");
  d.def(
      "new_group",
      [](const std::vector<int>& ranks) {
        py::gil_scoped_release nogil;
        return dist::new_group(ranks);
      },
      py::arg("ranks"), "A group of these global ranks (every rank calls it); None where not a member");

  // ---- collectives (group ranks)
  // (the GIL released while they run: a collective waits for the other ranks)
  using PG = dist::ProcessGroup;
  const auto nogil = py::call_guard<py::gil_scoped_release>();
  d.def(
      "all_reduce",
      [](Tensor& t, dist::ReduceOp op, PG* g, bool async_op) { return group_or_world(g).all_reduce(t, op, async_op); },
      py::arg("tensor"), py::arg("op"), py::arg("group"), py::arg("async_op"), nogil);
  d.def(
      "broadcast",
      [](Tensor& t, int src, PG* g, bool async_op) { return group_or_world(g).broadcast(t, src, async_op); },
      py::arg("tensor"), py::arg("src"), py::arg("group"), py::arg("async_op"), nogil);
  d.def(
      "all_gather_into_tensor",
      [](Tensor& out, const Tensor& in, PG* g, bool async_op) {
        return group_or_world(g).all_gather_into_tensor(out, in, async_op);
      },
      py::arg("output"), py::arg("input"), py::arg("group"), py::arg("async_op"), nogil);
  d.def(
      "reduce_scatter_tensor",
      [](Tensor& out, const Tensor& in, dist::ReduceOp op, PG* g, bool async_op) {
        return group_or_world(g).reduce_scatter_tensor(out, in, op, async_op);
      },
      py::arg("output"), py::arg("input"), py::arg("op"), py::arg("group"), py::arg("async_op"), nogil);
  d.def(
      "all_to_all_single",
      [](Tensor& out, const Tensor& in, PG* g, bool async_op) {
        return group_or_world(g).all_to_all_single(out, in, async_op);
      },
      py::arg("output"), py::arg("input"), py::arg("group"), py::arg("async_op"), nogil);
  d.def(
      "send", [](const Tensor& t, int dst, PG* g, int tag) { group_or_world(g).send(t, dst, tag); }, py::arg("tensor"),
      py::arg("dst"), py::arg("group"), py::arg("tag"), nogil);
  d.def(
      "recv", [](Tensor& t, int src, PG* g, int tag) { group_or_world(g).recv(t, src, tag); }, py::arg("tensor"),
      py::arg("src"), py::arg("group"), py::arg("tag"), nogil);
  d.def(
      "barrier", [](PG* g) { group_or_world(g).barrier(); }, py::arg("group"), nogil);
  d.def(
      "group_rank", [](PG* g) { return group_or_world(g).rank(); }, py::arg("group"));
  d.def(
      "group_size", [](PG* g) { return group_or_world(g).size(); }, py::arg("group"));
  d.def(
      "group_ranks", [](PG* g) { return group_or_world(g).ranks(); }, py::arg("group"));
  d.def(
      "group_device", [](PG* g) { return group_or_world(g).device(); }, py::arg("group"));

  // ---- logging
  d.def("log", &dist::log, py::arg("msg"), "Writes '[rank R/W] msg' to stderr, one whole line");
  d.def("log0", &dist::log0, py::arg("msg"), "log() on rank 0 only");

  // ---- DistributedSampler
  py::class_<dist::DistributedSampler>(d, "DistributedSampler")
      .def(py::init<int64_t, int, int, bool, uint64_t, bool>(), py::arg("dataset_size"), py::arg("num_replicas"),
           py::arg("rank"), py::arg("shuffle"), py::arg("seed"), py::arg("drop_last"))
      .def("set_epoch", &dist::DistributedSampler::set_epoch, py::arg("epoch"))
      .def("indices", &dist::DistributedSampler::indices)
      .def("num_samples", &dist::DistributedSampler::num_samples);

  // ---- DDP over a Python module
  py::class_<PythonDDP>(d, "Reducer", "The C++ DDP reducer over a Python module's parameters")
      .def(py::init([](const std::vector<std::pair<std::string, Tensor>>& params,
                       const std::vector<std::pair<std::string, Tensor>>& buffers, double bucket_cap_mb,
                       bool find_unused_parameters, bool gradient_as_bucket_view,
                       std::shared_ptr<dist::ProcessGroup> group) {
             dist::DDPOptions o;
             o.bucket_cap_mb = bucket_cap_mb;
             o.find_unused_parameters = find_unused_parameters;
             o.gradient_as_bucket_view = gradient_as_bucket_view;
             o.broadcast_buffers = false;   // prepare_forward does it, over the module's current buffers
             if (!group) dist::world();     // throws unless initialized
             py::gil_scoped_release nogil;  // broadcasts rank 0's parameters and buffers
             return std::make_unique<PythonDDP>(params, buffers, o, std::move(group));
           }),
           py::arg("params"), py::arg("buffers"), py::arg("bucket_cap_mb"), py::arg("find_unused_parameters"),
           py::arg("gradient_as_bucket_view"), py::arg("group"))
      .def(
          "prepare_forward",
          [](PythonDDP& r, const std::vector<Tensor>& buffers, bool broadcast) {
            py::gil_scoped_release nogil;
            r.prepare_forward(buffers, broadcast);
          },
          py::arg("buffers"), py::arg("broadcast"))
      .def("reduce_gradients",
           [](PythonDDP& r) {
             py::gil_scoped_release nogil;
             r.reduce_gradients();
           })
      .def_property("sync", &PythonDDP::sync, &PythonDDP::set_sync)
      .def("unused_parameters", &PythonDDP::unused_parameters)
      .def("bucket_indices", &PythonDDP::bucket_indices);

  // ---- FSDP over a Python module
  py::class_<PythonFSDP>(d, "FSDP", "The C++ FullyShardedDataParallel over a Python module's parameters")
      .def(py::init([](const std::vector<std::pair<std::string, dist::NamedTensors>>& units,
                       const dist::NamedTensors& buffers, const std::string& strategy, double lr, double beta1,
                       double beta2, double eps, double weight_decay, bool prefetch, std::optional<DType> param_dtype,
                       std::shared_ptr<dist::ProcessGroup> group) {
             dist::FSDPOptions o;
             o.strategy = dist::sharding_strategy_from_string(strategy);
             o.lr = lr, o.beta1 = beta1, o.beta2 = beta2, o.eps = eps, o.weight_decay = weight_decay;
             o.prefetch = prefetch;
             o.param_dtype = param_dtype;
             if (!group) dist::world();  // throws unless initialized
             auto w = std::make_unique<PythonFSDP>();
             w->group = group;
             py::gil_scoped_release nogil;  // broadcasts rank 0's parameters and buffers
             w->fsdp = std::make_unique<dist::FullyShardedDataParallel>(units, buffers, o, group.get());
             return w;
           }),
           py::arg("units"), py::arg("buffers"), py::arg("strategy"), py::arg("lr"), py::arg("beta1"), py::arg("beta2"),
           py::arg("eps"), py::arg("weight_decay"), py::arg("prefetch"), py::arg("param_dtype"), py::arg("group"))
      .def(
          "prepare_forward",
          [](PythonFSDP& f) {
            py::gil_scoped_release nogil;
            f.fsdp->prepare_forward();
          },
          "Buffers from rank 0; the root unit gathered (full)")
      .def(
          "finish_forward", [](PythonFSDP& f, const Tensor& y) { return f.fsdp->finish_forward(y); }, py::arg("y"),
          "The output, made to gather the root unit again before its backward")
      .def(
          "unit_forward",
          [](PythonFSDP& f, size_t k, const std::function<Tensor()>& fn) { return f.fsdp->unit_forward(k, fn); },
          py::arg("k"), py::arg("fn"), "fn() as unit k's forward (gathered before, released after)")
      .def(
          "clip_grad_norm_",
          [](PythonFSDP& f, double max_norm) {
            py::gil_scoped_release nogil;
            return f.fsdp->clip_grad_norm_(max_norm);
          },
          py::arg("max_norm"), "Scales the gradient shards to a global 2-norm of at most max_norm; returns the norm")
      .def(
          "step",
          [](PythonFSDP& f) {
            py::gil_scoped_release nogil;
            f.fsdp->step();
          },
          "One AdamW step of this rank's shards")
      .def(
          "zero_grad", [](PythonFSDP& f) { f.fsdp->zero_grad(); }, "Drops the reduced and the local gradients")
      .def(
          "set_lr", [](PythonFSDP& f, double lr) { f.fsdp->set_lr(lr); }, py::arg("lr"))
      .def(
          "full_state_dict",
          [](PythonFSDP& f) {
            py::gil_scoped_release nogil;
            return f.fsdp->full_state_dict();
          },
          "Every parameter whole and the buffers (a collective)")
      .def(
          "save_sharded",
          [](PythonFSDP& f, const std::string& dir) {
            py::gil_scoped_release nogil;
            f.fsdp->save_sharded(dir);
          },
          py::arg("dir"))
      .def(
          "load_sharded",
          [](PythonFSDP& f, const std::string& dir) {
            py::gil_scoped_release nogil;
            f.fsdp->load_sharded(dir);
          },
          py::arg("dir"))
      .def_property("sync", &PythonFSDP::sync, &PythonFSDP::set_sync)
      .def("num_units", [](const PythonFSDP& f) { return f.fsdp->num_units(); })
      .def("steps", [](const PythonFSDP& f) { return f.fsdp->steps(); })
      .def("memory", [](const PythonFSDP& f) {
        const auto m = f.fsdp->memory();
        return std::map<std::string, int64_t>{
            {"params", m.params}, {"master", m.master}, {"grads", m.grads}, {"optimizer_state", m.optimizer_state}};
      });
}

}  // namespace genesis::python

// tools/python/src/optim.cpp - genesis.optim: SGD, Adam, AdamW (the C++
// optimizers on the fused step ops), their param_groups as live dict-like
// views, state_dict in torch's nested form, the LR schedulers and gradient
// clipping.  params may be tensors or dicts {"params": [...], "lr": ...}.
#include <cmath>
#include <limits>

#include "bind.h"
#include "genesis/optim.hpp"

namespace genesis::python {
namespace {

using optim::Optimizer;
using optim::ParamGroup;

std::vector<Tensor> tensor_list(py::handle params) {
  if (py::isinstance<Tensor>(params)) return {params.cast<Tensor>()};
  std::vector<Tensor> out;
  for (py::handle p : params) out.push_back(p.cast<Tensor>());
  return out;
}

// A param-group dict's options ("betas" becomes beta1 and beta2; booleans 0/1).
void put_option(std::map<std::string, double>& o, const std::string& k, py::handle v) {
  if (k == "betas") {
    o["beta1"] = v[py::int_(0)].cast<double>();
    o["beta2"] = v[py::int_(1)].cast<double>();
  } else if (k != "params" && k != "initial_lr" && !v.is_none()) {
    o[k] = v.cast<double>();
  }
}

// params: an iterable of tensors (one group) or of dicts (one group each).
std::vector<ParamGroup> groups_of(py::handle params) {
  py::list items = py::list(py::reinterpret_borrow<py::object>(params));
  if (items.size() == 0) throw py::value_error("optimizer got an empty parameter list");
  std::vector<ParamGroup> groups;
  if (!py::isinstance<py::dict>(items[0])) {
    groups.emplace_back(tensor_list(items));
    return groups;
  }
  for (py::handle g : items) {
    py::dict d = py::reinterpret_borrow<py::dict>(g);
    if (!d.contains("params")) throw py::value_error("a parameter group needs a 'params' entry");
    std::map<std::string, double> o;
    for (auto kv : d) put_option(o, kv.first.cast<std::string>(), kv.second);
    groups.emplace_back(tensor_list(d["params"]), o);
  }
  return groups;
}

// A live view of one group: reads and writes go to the optimizer (as torch's dicts do).
struct GroupRef {
  Optimizer* opt;
  size_t index;
  ParamGroup& g() const { return opt->param_groups().at(index); }
};

py::object group_get(const GroupRef& r, const std::string& k) {
  ParamGroup& g = r.g();
  if (k == "params") return py::cast(g.params);
  if (k == "betas" && g.has("beta1")) return py::make_tuple(g["beta1"], g["beta2"]);
  if (k == "nesterov" || k == "maximize" || k == "amsgrad") return py::bool_(g.has(k) && g[k] != 0);
  if (!g.has(k)) throw py::key_error(k);
  return py::float_(g[k]);
}

py::dict group_dict(const GroupRef& r, bool with_params) {
  py::dict d;
  if (with_params) d["params"] = group_get(r, "params");
  for (const auto& [k, v] : r.g().options) {
    if (k == "beta1" || k == "beta2") continue;
    d[py::str(k)] = group_get(r, k);
  }
  if (r.g().has("beta1")) d["betas"] = group_get(r, "betas");
  return d;
}

// torch's optimizer state_dict: {"state": {i: {"step": n, name: tensor}}, "param_groups": [{..., "params": [i]}]}.
py::dict state_dict_of(const Optimizer& opt) {
  optim::OptimizerStateDict sd = opt.state_dict();
  py::dict state;
  for (const auto& [i, ps] : sd.state) {
    py::dict s;
    s["step"] = ps.step;
    for (const auto& [name, t] : ps.tensors) s[py::str(name)] = t;
    state[py::int_(i)] = s;
  }
  py::list groups;
  for (size_t g = 0; g < sd.param_groups.size(); ++g) {
    py::dict d;
    for (const auto& [k, v] : sd.param_groups[g]) d[py::str(k)] = v;
    d["params"] = py::cast(sd.group_params[g]);
    groups.append(d);
  }
  py::dict out;
  out["state"] = state;
  out["param_groups"] = groups;
  return out;
}

optim::OptimizerStateDict state_dict_from(py::dict d) {
  optim::OptimizerStateDict sd;
  for (auto kv : py::reinterpret_borrow<py::dict>(d["state"])) {
    optim::ParamState ps;
    for (auto e : py::reinterpret_borrow<py::dict>(kv.second)) {
      const std::string name = e.first.cast<std::string>();
      if (name == "step") {
        ps.step = py::isinstance<Tensor>(e.second) ? static_cast<int64_t>(e.second.cast<Tensor>().item_double())
                                                   : e.second.cast<int64_t>();
      } else {
        ps.tensors[name] = e.second.cast<Tensor>();
      }
    }
    sd.state[kv.first.cast<int64_t>()] = ps;
  }
  for (py::handle g : d["param_groups"]) {
    py::dict gd = py::reinterpret_borrow<py::dict>(g);
    std::map<std::string, double> o;
    for (auto kv : gd) put_option(o, kv.first.cast<std::string>(), kv.second);
    sd.param_groups.push_back(o);
    sd.group_params.push_back(gd["params"].cast<std::vector<int64_t>>());
  }
  return sd;
}

std::pair<double, double> betas_of(py::handle b) {
  return {b[py::int_(0)].cast<double>(), b[py::int_(1)].cast<double>()};
}

}  // namespace

void bind_optim(py::module_& m) {
  py::module_ o = m.def_submodule("optim", "optimizers, schedulers (genesis.optim)");
  py::class_<GroupRef>(o, "ParamGroup")
      .def("__getitem__", &group_get)
      .def("__setitem__",
           [](GroupRef& r, const std::string& k, py::handle v) {
             if (k == "params") {
               r.g().params = tensor_list(v);
               return;
             }
             put_option(r.g().options, k, v);
           })
      .def("__contains__",
           [](const GroupRef& r, const std::string& k) {
             return k == "params" || r.g().has(k) || (k == "betas" && r.g().has("beta1"));
           })
      .def(
          "get",
          [](const GroupRef& r, const std::string& k, py::object dflt) {
            py::dict d = group_dict(r, true);
            return d.contains(k) ? py::object(d[py::str(k)]) : dflt;
          },
          py::arg("key"), py::arg("default") = py::none())
      .def("keys", [](const GroupRef& r) { return group_dict(r, true).attr("keys")(); })
      .def("items", [](const GroupRef& r) { return group_dict(r, true).attr("items")(); })
      .def("__repr__", [](const GroupRef& r) { return py::repr(group_dict(r, false)); });

  py::class_<Optimizer>(o, "Optimizer")
      .def(
          "step",
          [](Optimizer& opt, py::handle closure) {
            py::object loss = py::none();
            if (!closure.is_none()) loss = closure();
            {
              py::gil_scoped_release nogil;
              opt.step();
            }
            return loss;
          },
          py::arg("closure") = py::none())
      .def("zero_grad", &Optimizer::zero_grad, py::arg("set_to_none") = true)
      // Each group view keeps its optimizer alive (a keep_alive on the returned list would need a
      // weak reference to the list, which Python lists refuse; pybind11 2 and 3 alike).
      .def_property_readonly("param_groups",
                             [](py::object self) {
                               Optimizer& opt = self.cast<Optimizer&>();
                               py::list out;
                               for (size_t i = 0; i < opt.param_groups().size(); ++i) {
                                 py::object ref = py::cast(GroupRef{&opt, i});
                                 py::detail::keep_alive_impl(ref, self);
                                 out.append(ref);
                               }
                               return out;
                             })
      .def_property_readonly("defaults", [](const Optimizer& opt) { return opt.defaults(); })
      .def(
          "add_param_group",
          [](Optimizer& opt, py::dict g) {
            for (auto& pg : groups_of(py::make_tuple(g))) opt.add_param_group(pg);
          },
          py::arg("param_group"))
      .def("state_dict", &state_dict_of)
      .def(
          "load_state_dict", [](Optimizer& opt, py::dict d) { opt.load_state_dict(state_dict_from(d)); },
          py::arg("state_dict"))
      .def("__repr__", [](Optimizer& opt) {
        std::string s = std::string(opt.name()) + " (";
        for (size_t i = 0; i < opt.param_groups().size(); ++i)
          s += "\n  group " + std::to_string(i) + ": " +
               py::repr(group_dict(GroupRef{&opt, i}, false)).cast<std::string>();
        return s + "\n)";
      });

  py::class_<optim::SGD, Optimizer>(o, "SGD").def(
      py::init([](py::handle params, double lr, double momentum, double dampening, double weight_decay, bool nesterov,
                  bool maximize) {
        return std::make_unique<optim::SGD>(
            groups_of(params), optim::SGDOptions{lr, momentum, dampening, weight_decay, nesterov, maximize});
      }),
      py::arg("params"), py::arg("lr") = 1e-3, py::arg("momentum") = 0.0, py::arg("dampening") = 0.0,
      py::arg("weight_decay") = 0.0, py::arg("nesterov") = false, py::kw_only(), py::arg("maximize") = false);
  py::class_<optim::Adam, Optimizer>(o, "Adam").def(
      py::init([](py::handle params, double lr, py::handle betas, double eps, double weight_decay, bool amsgrad,
                  bool maximize) {
        return std::make_unique<optim::Adam>(
            groups_of(params), optim::AdamOptions{lr, betas_of(betas), eps, weight_decay, maximize, amsgrad});
      }),
      py::arg("params"), py::arg("lr") = 1e-3, py::arg("betas") = py::make_tuple(0.9, 0.999), py::arg("eps") = 1e-8,
      py::arg("weight_decay") = 0.0, py::arg("amsgrad") = false, py::kw_only(), py::arg("maximize") = false);
  py::class_<optim::AdamW, optim::Adam>(o, "AdamW")
      .def(py::init([](py::handle params, double lr, py::handle betas, double eps, double weight_decay, bool amsgrad,
                       bool maximize) {
             return std::make_unique<optim::AdamW>(
                 groups_of(params), optim::AdamWOptions{lr, betas_of(betas), eps, weight_decay, maximize, amsgrad});
           }),
           py::arg("params"), py::arg("lr") = 1e-3, py::arg("betas") = py::make_tuple(0.9, 0.999),
           py::arg("eps") = 1e-8, py::arg("weight_decay") = 1e-2, py::arg("amsgrad") = false, py::kw_only(),
           py::arg("maximize") = false);

  // ---- schedulers (genesis.optim.lr_scheduler); each keeps its optimizer alive
  py::module_ s = o.def_submodule("lr_scheduler", "learning-rate schedulers");
  using optim::LRScheduler;
  py::class_<LRScheduler>(s, "LRScheduler")
      .def("step", &LRScheduler::step)
      .def("get_last_lr", &LRScheduler::get_last_lr)
      .def_property_readonly("last_epoch", &LRScheduler::last_epoch)
      .def_property_readonly("base_lrs", &LRScheduler::base_lrs)
      .def("state_dict", &LRScheduler::state_dict)
      .def("load_state_dict", &LRScheduler::load_state_dict, py::arg("state_dict"));
  py::class_<optim::LambdaLR, LRScheduler>(s, "LambdaLR")
      .def(py::init([](Optimizer& opt, py::handle fn, int64_t last_epoch) {
             if (py::isinstance<py::list>(fn) || py::isinstance<py::tuple>(fn))
               return std::make_unique<optim::LambdaLR>(opt, fn.cast<std::vector<optim::LambdaLR::Lambda>>(),
                                                        last_epoch);
             return std::make_unique<optim::LambdaLR>(opt, fn.cast<optim::LambdaLR::Lambda>(), last_epoch);
           }),
           py::arg("optimizer"), py::arg("lr_lambda"), py::arg("last_epoch") = -1, py::keep_alive<1, 2>());
  py::class_<optim::StepLR, LRScheduler>(s, "StepLR")
      .def(py::init<Optimizer&, int64_t, double, int64_t>(), py::arg("optimizer"), py::arg("step_size"),
           py::arg("gamma") = 0.1, py::arg("last_epoch") = -1, py::keep_alive<1, 2>());
  py::class_<optim::MultiStepLR, LRScheduler>(s, "MultiStepLR")
      .def(py::init<Optimizer&, std::vector<int64_t>, double, int64_t>(), py::arg("optimizer"), py::arg("milestones"),
           py::arg("gamma") = 0.1, py::arg("last_epoch") = -1, py::keep_alive<1, 2>());
  py::class_<optim::ExponentialLR, LRScheduler>(s, "ExponentialLR")
      .def(py::init<Optimizer&, double, int64_t>(), py::arg("optimizer"), py::arg("gamma"), py::arg("last_epoch") = -1,
           py::keep_alive<1, 2>());
  py::class_<optim::CosineAnnealingLR, LRScheduler>(s, "CosineAnnealingLR")
      .def(py::init<Optimizer&, int64_t, double, int64_t>(), py::arg("optimizer"), py::arg("T_max"),
           py::arg("eta_min") = 0.0, py::arg("last_epoch") = -1, py::keep_alive<1, 2>());
  py::class_<optim::LinearLR, LRScheduler>(s, "LinearLR")
      .def(py::init<Optimizer&, double, double, int64_t, int64_t>(), py::arg("optimizer"),
           py::arg("start_factor") = 1.0 / 3, py::arg("end_factor") = 1.0, py::arg("total_iters") = 5,
           py::arg("last_epoch") = -1, py::keep_alive<1, 2>());
  py::class_<optim::OneCycleLR, LRScheduler>(s, "OneCycleLR")
      .def(py::init([](Optimizer& opt, py::handle max_lr, std::optional<int64_t> total_steps,
                       std::optional<int64_t> epochs, std::optional<int64_t> steps_per_epoch, double pct_start,
                       const std::string& anneal_strategy, bool cycle_momentum, double base_momentum,
                       double max_momentum, double div_factor, double final_div_factor, bool three_phase,
                       int64_t last_epoch) {
             optim::OneCycleOptions oc;
             oc.total_steps = total_steps.value_or(0);
             oc.epochs = epochs.value_or(0);
             oc.steps_per_epoch = steps_per_epoch.value_or(0);
             oc.pct_start = pct_start;
             oc.anneal_cos = anneal_strategy != "linear";
             oc.cycle_momentum = cycle_momentum;
             oc.base_momentum = base_momentum;
             oc.max_momentum = max_momentum;
             oc.div_factor = div_factor;
             oc.final_div_factor = final_div_factor;
             oc.three_phase = three_phase;
             if (py::isinstance<py::list>(max_lr) || py::isinstance<py::tuple>(max_lr))
               return std::make_unique<optim::OneCycleLR>(opt, max_lr.cast<std::vector<double>>(), oc, last_epoch);
             return std::make_unique<optim::OneCycleLR>(opt, max_lr.cast<double>(), oc, last_epoch);
           }),
           py::arg("optimizer"), py::arg("max_lr"), py::arg("total_steps") = py::none(), py::arg("epochs") = py::none(),
           py::arg("steps_per_epoch") = py::none(), py::arg("pct_start") = 0.3, py::arg("anneal_strategy") = "cos",
           py::arg("cycle_momentum") = true, py::arg("base_momentum") = 0.85, py::arg("max_momentum") = 0.95,
           py::arg("div_factor") = 25.0, py::arg("final_div_factor") = 1e4, py::arg("three_phase") = false,
           py::arg("last_epoch") = -1, py::keep_alive<1, 2>())
      .def_property_readonly("total_steps", &optim::OneCycleLR::total_steps);
  s.def(
      "get_cosine_schedule_with_warmup",
      [](Optimizer& opt, int64_t warmup, int64_t total, double cycles, int64_t last_epoch) {
        return std::make_unique<optim::LambdaLR>(
            optim::get_cosine_schedule_with_warmup(opt, warmup, total, cycles, last_epoch));
      },
      py::arg("optimizer"), py::arg("num_warmup_steps"), py::arg("num_training_steps"), py::arg("num_cycles") = 0.5,
      py::arg("last_epoch") = -1, py::keep_alive<0, 1>());

  // ---- clipping (genesis.nn.utils)
  m.def(
      "clip_grad_norm_",
      [](py::handle params, double max_norm, py::handle norm_type, bool error_if_nonfinite) {
        double p = 2;
        if (!norm_type.is_none()) {
          if (py::isinstance<py::str>(norm_type))
            p = std::numeric_limits<double>::infinity();  // 'inf'
          else
            p = norm_type.cast<double>();
        }
        return nn::utils::clip_grad_norm_(tensor_list(params), max_norm, p, error_if_nonfinite);
      },
      py::arg("parameters"), py::arg("max_norm"), py::arg("norm_type") = 2.0, py::arg("error_if_nonfinite") = false);
  m.def(
      "clip_grad_value_", [](py::handle params, double v) { nn::utils::clip_grad_value_(tensor_list(params), v); },
      py::arg("parameters"), py::arg("clip_value"));
}

}  // namespace genesis::python

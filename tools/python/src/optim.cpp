// tools/python/src/optim.cpp - genesis.optim: SGD, Adam, AdamW, RMSprop, Adagrad,
// Adadelta, Adamax, NAdam, RAdam, Rprop, ASGD and LBFGS (the C++ optimizers), their param_groups as live
// dict-like views, state_dict in torch's nested form, the LR schedulers and
// gradient clipping.  params may be tensors or dicts {"params": [...], "lr": ...}.
#include <cmath>
#include <limits>

#include "bind.h"
#include "genesis/autograd.hpp"
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

// A Python number (anything float() takes but a string: int, float, NumPy scalars, 0-d tensors) as a double;
// TypeError naming `what` for anything else.
double number(py::handle v, const std::string& what) {
  PyObject* f = py::isinstance<py::str>(v) || py::isinstance<py::bytes>(v) ? nullptr : PyNumber_Float(v.ptr());
  if (!f) {
    PyErr_Clear();
    throw py::type_error(what + " must be a number, not " +
                         std::string(py::str(py::type::handle_of(v).attr("__name__"))));
  }
  const double d = PyFloat_AS_DOUBLE(f);
  Py_DECREF(f);
  return d;
}

// Numbers from a list or tuple; TypeError naming `what` for anything else.
std::vector<double> numbers(py::handle v, const std::string& what) {
  std::vector<double> out;
  for (py::handle x : v) out.push_back(number(x, what));
  return out;
}

// LBFGS's line_search_fn as its option value: None 0, "strong_wolfe" 1.
double line_search_code(py::handle v) {
  if (v.is_none()) return 0;
  if (py::isinstance<py::str>(v) && v.cast<std::string>() == "strong_wolfe") return 1;
  throw Error(GN_ERR_UNSUPPORTED, "only 'strong_wolfe' is supported");
}

// torch's pair options and the two options each is kept as.
struct PairOption {
  const char *name, *first, *second;
};
constexpr PairOption kPairs[] = {
    {"betas", "beta1", "beta2"}, {"etas", "etaminus", "etaplus"}, {"step_sizes", "step_size_min", "step_size_max"}};

const PairOption* pair_option(const std::string& k) {
  for (const auto& p : kPairs)
    if (k == p.name) return &p;
  return nullptr;
}

// Whether k is half of a pair option.
bool pair_half(const std::string& k) {
  for (const auto& p : kPairs)
    if (k == p.first || k == p.second) return true;
  return false;
}

// A pair option's two numbers.
std::pair<double, double> pair_of(py::handle v, const std::string& name) {
  const auto b = numbers(v, name);
  if (b.size() != 2) throw py::value_error(name + " must be a pair of numbers");
  return {b[0], b[1]};
}

// A param-group dict's options ("betas" becomes beta1 and beta2, "etas" etaminus and etaplus, "step_sizes"
// step_size_min and step_size_max; booleans 0/1; foreach, a performance hint of torch's, is accepted and ignored,
// and so are torch's differentiable and capturable when off).
void put_option(std::map<std::string, double>& o, const std::string& k, py::handle v) {
  if (const PairOption* p = pair_option(k)) {
    const auto b = pair_of(v, k);
    o[p->first] = b.first;
    o[p->second] = b.second;
  } else if (k == "line_search_fn") {
    o[k] = line_search_code(v);
  } else if (k == "differentiable" || k == "capturable") {  // torch's flags: off is what genesis does
    if (py::isinstance<py::bool_>(v) && v.cast<bool>())
      throw py::value_error("genesis optimizers do not support " + k + "=True");
  } else if (k != "params" && k != "foreach" && !v.is_none()) {
    o[k] = number(v, "option '" + k + "'");
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

// Option k of a group as torch shows it: betas a pair, flags bools, counts ints, line_search_fn a string or None.
py::object option_object(const std::map<std::string, double>& o, const std::string& k) {
  auto has = [&](const std::string& key) { return o.count(key) != 0; };
  if (const PairOption* p = pair_option(k); p && has(p->first)) return py::make_tuple(o.at(p->first), o.at(p->second));
  if (k == "nesterov" || k == "maximize" || k == "amsgrad" || k == "centered") return py::bool_(has(k) && o.at(k) != 0);
  if (!has(k)) throw py::key_error(k);
  const double v = o.at(k);
  if (k == "line_search_fn") return v != 0 ? py::object(py::str("strong_wolfe")) : py::object(py::none());
  if (k == "max_iter" || k == "max_eval" || k == "history_size") return py::int_(static_cast<int64_t>(v));
  return py::float_(v);
}

// The options of a group in torch's form (beta1 and beta2 as "betas", ...).
py::dict options_dict(const std::map<std::string, double>& o) {
  py::dict d;
  for (const auto& [k, v] : o) {
    if (pair_half(k)) continue;
    d[py::str(k)] = option_object(o, k);
  }
  for (const auto& p : kPairs)
    if (o.count(p.first)) d[p.name] = option_object(o, p.name);
  return d;
}

py::object group_get(const GroupRef& r, const std::string& k) {
  ParamGroup& g = r.g();
  if (k == "params") return py::cast(g.params);
  return option_object(g.options, k);
}

py::dict group_dict(const GroupRef& r, bool with_params) {
  py::dict d;
  if (with_params) d["params"] = group_get(r, "params");
  for (auto kv : options_dict(r.g().options)) d[kv.first] = kv.second;
  return d;
}

// torch's optimizer state_dict: {"state": {i: {"step": n, name: tensor}}, "param_groups": [{..., "params": [i]}]}.
// LBFGS keeps no step; its counts are ints and its step size and last loss floats, as in torch.
py::dict state_dict_of(const Optimizer& opt) {
  optim::OptimizerStateDict sd = opt.state_dict();
  const bool lbfgs = std::string(opt.name()) == "LBFGS";
  py::dict state;
  for (const auto& [i, ps] : sd.state) {
    py::dict s;
    if (!lbfgs) s["step"] = ps.step;
    for (const auto& [name, t] : ps.tensors) {
      if (lbfgs && (name == "func_evals" || name == "n_iter"))
        s[py::str(name)] = py::int_(static_cast<int64_t>(t.item_double()));
      else if (lbfgs && (name == "t" || name == "prev_loss"))
        s[py::str(name)] = py::float_(t.item_double());
      else
        s[py::str(name)] = t;
    }
    state[py::int_(i)] = s;
  }
  py::list groups;
  for (size_t g = 0; g < sd.param_groups.size(); ++g) {
    py::dict d = options_dict(sd.param_groups[g]);
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
      } else if (py::isinstance<Tensor>(e.second)) {
        ps.tensors[name] = e.second.cast<Tensor>();
      } else if (py::isinstance<py::int_>(e.second) && !py::isinstance<py::bool_>(e.second)) {
        ps.tensors[name] = scalar_tensor(static_cast<double>(e.second.cast<int64_t>()), {.dtype = DType::i64});
      } else if (py::isinstance<py::float_>(e.second)) {
        ps.tensors[name] = scalar_tensor(e.second.cast<double>(), {.dtype = DType::f64});
      } else {
        throw py::type_error("optimizer state '" + name + "' must be a tensor or a number, not " +
                             std::string(py::str(py::type::handle_of(e.second).attr("__name__"))));
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

std::pair<double, double> betas_of(py::handle b) { return pair_of(b, "betas"); }

// A number or one number per parameter group (torch's _format_param): the list's length is checked.
std::vector<double> per_group(py::handle v, const Optimizer& opt, const std::string& name) {
  if (!py::isinstance<py::list>(v) && !py::isinstance<py::tuple>(v)) return {number(v, name)};
  auto out = numbers(v, name);
  const size_t n = opt.param_groups().size();
  if (out.size() != n)
    throw py::value_error("expected " + std::to_string(n) + " values for " + name + ", got " +
                          std::to_string(out.size()));
  return out;
}

// torch's warning for scheduler.step(epoch).
void warn_epoch_deprecated() {
  if (PyErr_WarnEx(PyExc_UserWarning,
                   "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where "
                   "possible. Please use `scheduler.step()` to step the scheduler. During the deprecation, if epoch "
                   "is different from None, the closed form is used instead of the new chainable form, where "
                   "available.",
                   1) != 0)
    throw py::error_already_set();
}

// The schedulers of SequentialLR / ChainedScheduler (TypeError for anything else); `keep` holds them.
std::vector<optim::LRScheduler*> schedulers_of(py::handle seq, py::tuple& keep, const char* who) {
  keep = py::tuple(py::reinterpret_borrow<py::object>(seq));
  std::vector<optim::LRScheduler*> out;
  for (py::handle s : keep) {
    if (!py::isinstance<optim::LRScheduler>(s))
      throw py::type_error(std::string(who) + " expects learning-rate schedulers, got " +
                           std::string(py::str(py::type::handle_of(s).attr("__name__"))));
    out.push_back(s.cast<optim::LRScheduler*>());
  }
  return out;
}

// The C++ schedulers of schedulers, holding the Python objects they point to.
struct PySequentialLR : optim::SequentialLR {
  PySequentialLR(Optimizer& o, std::vector<optim::LRScheduler*> s, std::vector<int64_t> m, int64_t last_epoch,
                 py::tuple keep)
      : SequentialLR(o, std::move(s), std::move(m), last_epoch), keep_(std::move(keep)) {}
  py::tuple keep_;
};

struct PyChainedScheduler : optim::ChainedScheduler {
  PyChainedScheduler(std::vector<optim::LRScheduler*> s, py::tuple keep)
      : ChainedScheduler(std::move(s)), keep_(std::move(keep)) {}
  py::tuple keep_;
};

// ReduceLROnPlateau with torch's verbose messages.
struct PyReduceLROnPlateau : optim::ReduceLROnPlateau {
  PyReduceLROnPlateau(Optimizer& o, optim::ReduceLROnPlateauOptions opts, bool verbose_)
      : ReduceLROnPlateau(o, std::move(opts)), verbose(verbose_) {}
  bool verbose;
};

// A Python lr_lambda as a C++ one (the GIL taken for the call; TypeError for a result that is no number).
template <class Lambda>
Lambda lambda_of(py::handle f) {
  if (!PyCallable_Check(f.ptr())) throw py::type_error("lr_lambda must be callable");
  auto fn = keep_callable(py::reinterpret_borrow<py::function>(f));
  return [fn](int64_t epoch) {
    py::gil_scoped_acquire gil;
    return number((*fn)(epoch), "the result of lr_lambda");
  };
}

// LambdaLR / MultiplicativeLR's lr_lambda: one callable, or a list or tuple of one per group.
template <class S>
std::unique_ptr<S> make_lambda_scheduler(Optimizer& opt, py::handle fn, int64_t last_epoch) {
  if (py::isinstance<py::list>(fn) || py::isinstance<py::tuple>(fn)) {
    if (py::len(fn) != opt.param_groups().size())
      throw py::value_error("Expected " + std::to_string(opt.param_groups().size()) + " lr_lambdas, but got " +
                            std::to_string(py::len(fn)));
    std::vector<typename S::Lambda> fns;
    for (py::handle f : fn) fns.push_back(lambda_of<typename S::Lambda>(f));
    return std::make_unique<S>(opt, std::move(fns), last_epoch);
  }
  return std::make_unique<S>(opt, lambda_of<typename S::Lambda>(fn), last_epoch);
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
             const PairOption* p = pair_option(k);
             return k == "params" || r.g().has(k) || (p && r.g().has(p->first));
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
            if (!closure.is_none()) {  // with gradients enabled, as torch
              const bool was = autograd::grad_enabled();
              autograd::set_grad_enabled(true);
              try {
                loss = closure();
              } catch (...) {
                autograd::set_grad_enabled(was);
                throw;
              }
              autograd::set_grad_enabled(was);
            }
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
  // foreach is torch's choice of kernel: accepted, no effect here.
  py::class_<optim::RMSprop, Optimizer>(o, "RMSprop")
      .def(py::init([](py::handle params, double lr, double alpha, double eps, double weight_decay, double momentum,
                       bool centered, std::optional<bool>, bool maximize) {
             return std::make_unique<optim::RMSprop>(
                 groups_of(params), optim::RMSpropOptions{lr, alpha, eps, weight_decay, momentum, centered, maximize});
           }),
           py::arg("params"), py::arg("lr") = 1e-2, py::arg("alpha") = 0.99, py::arg("eps") = 1e-8,
           py::arg("weight_decay") = 0.0, py::arg("momentum") = 0.0, py::arg("centered") = false,
           py::arg("foreach") = py::none(), py::arg("maximize") = false);
  py::class_<optim::Adagrad, Optimizer>(o, "Adagrad")
      .def(py::init([](py::handle params, double lr, double lr_decay, double weight_decay, double initial_accumulator,
                       double eps, std::optional<bool>, bool maximize) {
             return std::make_unique<optim::Adagrad>(
                 groups_of(params),
                 optim::AdagradOptions{lr, lr_decay, weight_decay, initial_accumulator, eps, maximize});
           }),
           py::arg("params"), py::arg("lr") = 1e-2, py::arg("lr_decay") = 0.0, py::arg("weight_decay") = 0.0,
           py::arg("initial_accumulator_value") = 0.0, py::arg("eps") = 1e-10, py::arg("foreach") = py::none(),
           py::kw_only(), py::arg("maximize") = false);
  py::class_<optim::Adamax, Optimizer>(o, "Adamax")
      .def(py::init([](py::handle params, double lr, py::handle betas, double eps, double weight_decay,
                       std::optional<bool>, bool maximize) {
             return std::make_unique<optim::Adamax>(
                 groups_of(params), optim::AdamaxOptions{lr, betas_of(betas), eps, weight_decay, maximize});
           }),
           py::arg("params"), py::arg("lr") = 2e-3, py::arg("betas") = py::make_tuple(0.9, 0.999),
           py::arg("eps") = 1e-8, py::arg("weight_decay") = 0.0, py::arg("foreach") = py::none(), py::kw_only(),
           py::arg("maximize") = false);
  py::class_<optim::NAdam, Optimizer>(o, "NAdam")
      .def(py::init([](py::handle params, double lr, py::handle betas, double eps, double weight_decay,
                       double momentum_decay, std::optional<bool>) {
             return std::make_unique<optim::NAdam>(
                 groups_of(params), optim::NAdamOptions{lr, betas_of(betas), eps, weight_decay, momentum_decay});
           }),
           py::arg("params"), py::arg("lr") = 2e-3, py::arg("betas") = py::make_tuple(0.9, 0.999),
           py::arg("eps") = 1e-8, py::arg("weight_decay") = 0.0, py::arg("momentum_decay") = 4e-3,
           py::arg("foreach") = py::none());
  py::class_<optim::RAdam, Optimizer>(o, "RAdam")
      .def(py::init([](py::handle params, double lr, py::handle betas, double eps, double weight_decay,
                       std::optional<bool>) {
             return std::make_unique<optim::RAdam>(groups_of(params),
                                                   optim::RAdamOptions{lr, betas_of(betas), eps, weight_decay});
           }),
           py::arg("params"), py::arg("lr") = 1e-3, py::arg("betas") = py::make_tuple(0.9, 0.999),
           py::arg("eps") = 1e-8, py::arg("weight_decay") = 0.0, py::arg("foreach") = py::none());
  py::class_<optim::Adadelta, Optimizer>(o, "Adadelta")
      .def(py::init([](py::handle params, double lr, double rho, double eps, double weight_decay, std::optional<bool>,
                       bool maximize) {
             return std::make_unique<optim::Adadelta>(groups_of(params),
                                                      optim::AdadeltaOptions{lr, rho, eps, weight_decay, maximize});
           }),
           py::arg("params"), py::arg("lr") = 1.0, py::arg("rho") = 0.9, py::arg("eps") = 1e-6,
           py::arg("weight_decay") = 0.0, py::arg("foreach") = py::none(), py::kw_only(), py::arg("maximize") = false);
  py::class_<optim::Rprop, Optimizer>(o, "Rprop")
      .def(py::init([](py::handle params, double lr, py::handle etas, py::handle step_sizes, std::optional<bool>,
                       bool maximize) {
             return std::make_unique<optim::Rprop>(
                 groups_of(params),
                 optim::RpropOptions{lr, pair_of(etas, "etas"), pair_of(step_sizes, "step_sizes"), maximize});
           }),
           py::arg("params"), py::arg("lr") = 1e-2, py::arg("etas") = py::make_tuple(0.5, 1.2),
           py::arg("step_sizes") = py::make_tuple(1e-6, 50), py::arg("foreach") = py::none(),
           py::arg("maximize") = false);
  py::class_<optim::ASGD, Optimizer>(o, "ASGD").def(
      py::init([](py::handle params, double lr, double lambd, double alpha, double t0, double weight_decay,
                  std::optional<bool>, bool maximize) {
        return std::make_unique<optim::ASGD>(groups_of(params),
                                             optim::ASGDOptions{lr, lambd, alpha, t0, weight_decay, maximize});
      }),
      py::arg("params"), py::arg("lr") = 1e-2, py::arg("lambd") = 1e-4, py::arg("alpha") = 0.75, py::arg("t0") = 1e6,
      py::arg("weight_decay") = 0.0, py::arg("foreach") = py::none(), py::arg("maximize") = false);
  py::class_<optim::LBFGS, Optimizer>(o, "LBFGS")
      .def(py::init([](py::handle params, double lr, int64_t max_iter, std::optional<int64_t> max_eval,
                       double tolerance_grad, double tolerance_change, int64_t history_size, py::handle line_search) {
             optim::LBFGSOptions lo{lr, max_iter, max_eval, tolerance_grad, tolerance_change, history_size, ""};
             if (line_search_code(line_search) != 0) lo.line_search_fn = "strong_wolfe";
             return std::make_unique<optim::LBFGS>(groups_of(params), lo);
           }),
           py::arg("params"), py::arg("lr") = 1.0, py::arg("max_iter") = 20, py::arg("max_eval") = py::none(),
           py::arg("tolerance_grad") = 1e-7, py::arg("tolerance_change") = 1e-9, py::arg("history_size") = 100,
           py::arg("line_search_fn") = py::none())
      .def(
          "step",
          [](optim::LBFGS& opt, py::function closure) {
            py::object first;
            opt.step([&]() -> Tensor {
              py::object loss = closure();
              if (!first) first = loss;
              if (py::isinstance<Tensor>(loss)) return loss.cast<Tensor>();
              return scalar_tensor(py::float_(loss).cast<double>(), {.dtype = DType::f64});
            });
            return first ? first : py::object(py::none());
          },
          py::arg("closure"),
          "Runs up to max_iter L-BFGS iterations; closure re-evaluates the model (zero_grad, loss, backward) and "
          "returns the loss; returns the first loss.");

  // ---- schedulers (genesis.optim.lr_scheduler); each keeps its optimizer alive
  py::module_ s = o.def_submodule("lr_scheduler", "learning-rate schedulers");
  using optim::LRScheduler;
  py::class_<LRScheduler>(s, "LRScheduler")
      .def(
          "step",
          [](LRScheduler& sch, std::optional<int64_t> epoch) {
            if (!epoch) return sch.step();
            warn_epoch_deprecated();
            sch.step(*epoch);
          },
          py::arg("epoch") = py::none())
      .def("get_last_lr", &LRScheduler::get_last_lr)
      .def_property_readonly("optimizer", &LRScheduler::optimizer, py::return_value_policy::reference)
      .def_property_readonly("last_epoch", &LRScheduler::last_epoch)
      .def_property_readonly("base_lrs", &LRScheduler::base_lrs)
      .def("state_dict", &LRScheduler::state_dict)
      .def("load_state_dict", &LRScheduler::load_state_dict, py::arg("state_dict"));
  py::class_<optim::LambdaLR, LRScheduler>(s, "LambdaLR")
      .def(py::init(&make_lambda_scheduler<optim::LambdaLR>), py::arg("optimizer"), py::arg("lr_lambda"),
           py::arg("last_epoch") = -1, py::keep_alive<1, 2>());
  py::class_<optim::MultiplicativeLR, LRScheduler>(s, "MultiplicativeLR")
      .def(py::init(&make_lambda_scheduler<optim::MultiplicativeLR>), py::arg("optimizer"), py::arg("lr_lambda"),
           py::arg("last_epoch") = -1, py::keep_alive<1, 2>());
  py::class_<optim::CosineAnnealingWarmRestarts, LRScheduler>(s, "CosineAnnealingWarmRestarts")
      .def(py::init<Optimizer&, int64_t, int64_t, double, int64_t>(), py::arg("optimizer"), py::arg("T_0"),
           py::arg("T_mult") = 1, py::arg("eta_min") = 0.0, py::arg("last_epoch") = -1, py::keep_alive<1, 2>())
      .def(
          "step",
          [](optim::CosineAnnealingWarmRestarts& sch, py::handle epoch) {
            if (epoch.is_none())
              sch.step();
            else
              sch.step_to(number(epoch, "epoch"));
          },
          py::arg("epoch") = py::none(),
          "The next epoch, or a given one, fractional within an epoch (epoch + i / iters).");
  py::class_<optim::ConstantLR, LRScheduler>(s, "ConstantLR")
      .def(py::init<Optimizer&, double, int64_t, int64_t>(), py::arg("optimizer"), py::arg("factor") = 1.0 / 3,
           py::arg("total_iters") = 5, py::arg("last_epoch") = -1, py::keep_alive<1, 2>());
  py::class_<optim::PolynomialLR, LRScheduler>(s, "PolynomialLR")
      .def(py::init<Optimizer&, int64_t, double, int64_t>(), py::arg("optimizer"), py::arg("total_iters") = 5,
           py::arg("power") = 1.0, py::arg("last_epoch") = -1, py::keep_alive<1, 2>());
  py::class_<PySequentialLR, LRScheduler>(s, "SequentialLR")
      .def(py::init([](Optimizer& opt, py::handle schedulers, std::vector<int64_t> milestones, int64_t last_epoch) {
             py::tuple keep;
             auto list = schedulers_of(schedulers, keep, "SequentialLR");
             return std::make_unique<PySequentialLR>(opt, std::move(list), std::move(milestones), last_epoch,
                                                     std::move(keep));
           }),
           py::arg("optimizer"), py::arg("schedulers"), py::arg("milestones"), py::arg("last_epoch") = -1,
           py::keep_alive<1, 2>())
      .def("step", [](PySequentialLR& sch) { sch.step(); })
      .def_property_readonly("_schedulers", [](const PySequentialLR& sch) { return py::list(sch.keep_); });
  py::class_<PyChainedScheduler, LRScheduler>(s, "ChainedScheduler")
      .def(py::init([](py::handle schedulers) {
             py::tuple keep;
             auto list = schedulers_of(schedulers, keep, "ChainedScheduler");
             return std::make_unique<PyChainedScheduler>(std::move(list), std::move(keep));
           }),
           py::arg("schedulers"))
      .def("step", [](PyChainedScheduler& sch) { sch.step(); })
      .def_property_readonly("_schedulers", [](const PyChainedScheduler& sch) { return py::list(sch.keep_); });
  py::class_<optim::CyclicLR, LRScheduler>(s, "CyclicLR")
      .def(py::init([](Optimizer& opt, py::handle base_lr, py::handle max_lr, double step_size_up,
                       std::optional<double> step_size_down, const std::string& mode, double gamma, py::object scale_fn,
                       const std::string& scale_mode, bool cycle_momentum, py::handle base_momentum,
                       py::handle max_momentum, int64_t last_epoch) {
             optim::CyclicLROptions co;
             co.step_size_up = step_size_up;
             co.step_size_down = step_size_down;
             co.mode = mode;
             co.gamma = gamma;
             if (!scale_fn.is_none()) {
               if (!PyCallable_Check(scale_fn.ptr())) throw py::type_error("scale_fn must be callable");
               auto fn = keep_callable(py::reinterpret_borrow<py::function>(scale_fn));
               // torch calls scale_fn with an int: the cycle number or the iteration.
               co.scale_fn = [fn](double x) {
                 py::gil_scoped_acquire gil;
                 return number((*fn)(py::int_(static_cast<int64_t>(x))), "the result of scale_fn");
               };
             }
             co.scale_mode = scale_mode;
             co.cycle_momentum = cycle_momentum;
             if (cycle_momentum) {
               co.base_momentum = per_group(base_momentum, opt, "base_momentum");
               co.max_momentum = per_group(max_momentum, opt, "max_momentum");
             }
             return std::make_unique<optim::CyclicLR>(opt, per_group(base_lr, opt, "base_lr"),
                                                      per_group(max_lr, opt, "max_lr"), std::move(co), last_epoch);
           }),
           py::arg("optimizer"), py::arg("base_lr"), py::arg("max_lr"), py::arg("step_size_up") = 2000.0,
           py::arg("step_size_down") = py::none(), py::arg("mode") = "triangular", py::arg("gamma") = 1.0,
           py::arg("scale_fn") = py::none(), py::arg("scale_mode") = "cycle", py::arg("cycle_momentum") = true,
           py::arg("base_momentum") = 0.8, py::arg("max_momentum") = 0.9, py::arg("last_epoch") = -1,
           py::keep_alive<1, 2>());
  // Not an LRScheduler in torch 1.13: step takes the metric.
  py::class_<PyReduceLROnPlateau>(s, "ReduceLROnPlateau")
      .def(py::init([](Optimizer& opt, const std::string& mode, double factor, int64_t patience, double threshold,
                       const std::string& threshold_mode, int64_t cooldown, py::handle min_lr, double eps,
                       bool verbose) {
             optim::ReduceLROnPlateauOptions ro;
             ro.mode = mode;
             ro.factor = factor;
             ro.patience = patience;
             ro.threshold = threshold;
             ro.threshold_mode = threshold_mode;
             ro.cooldown = cooldown;
             if (py::isinstance<py::list>(min_lr) || py::isinstance<py::tuple>(min_lr)) {
               ro.min_lr = numbers(min_lr, "min_lr");
               if (ro.min_lr.size() != opt.param_groups().size())
                 throw py::value_error("expected " + std::to_string(opt.param_groups().size()) + " min_lrs, got " +
                                       std::to_string(ro.min_lr.size()));
             } else {
               ro.min_lr = {number(min_lr, "min_lr")};
             }
             ro.eps = eps;
             return std::make_unique<PyReduceLROnPlateau>(opt, std::move(ro), verbose);
           }),
           py::arg("optimizer"), py::arg("mode") = "min", py::arg("factor") = 0.1, py::arg("patience") = 10,
           py::arg("threshold") = 1e-4, py::arg("threshold_mode") = "rel", py::arg("cooldown") = 0,
           py::arg("min_lr") = 0.0, py::arg("eps") = 1e-8, py::arg("verbose") = false, py::keep_alive<1, 2>())
      .def(
          "step",
          [](PyReduceLROnPlateau& sch, py::handle metrics, std::optional<int64_t> epoch) {
            const double current = py::float_(py::reinterpret_borrow<py::object>(metrics)).cast<double>();
            if (epoch) {
              warn_epoch_deprecated();
              sch.step(current, *epoch);
            } else {
              sch.step(current);
            }
            if (!sch.verbose) return;
            const auto& groups = sch.optimizer().param_groups();
            for (size_t i = 0; i < groups.size(); ++i)
              if (sch.reduced(i))
                py::print(py::str("Epoch {}: reducing learning rate of group {} to {:.4e}.")
                              .format(py::str("%.5d").attr("__mod__")(sch.last_epoch()), i, groups[i]["lr"]));
          },
          py::arg("metrics"), py::arg("epoch") = py::none())
      .def("get_last_lr", &optim::ReduceLROnPlateau::get_last_lr)
      .def_property_readonly("last_epoch", &optim::ReduceLROnPlateau::last_epoch)
      .def_property_readonly("best", &optim::ReduceLROnPlateau::best)
      .def_property_readonly("num_bad_epochs", &optim::ReduceLROnPlateau::num_bad_epochs)
      .def_property_readonly("cooldown_counter", &optim::ReduceLROnPlateau::cooldown_counter)
      .def_property_readonly("in_cooldown", [](const PyReduceLROnPlateau& sch) { return sch.cooldown_counter() > 0; })
      .def_property_readonly("optimizer", &optim::ReduceLROnPlateau::optimizer, py::return_value_policy::reference)
      .def_readwrite("verbose", &PyReduceLROnPlateau::verbose)
      .def("state_dict", &optim::ReduceLROnPlateau::state_dict)
      .def("load_state_dict", &optim::ReduceLROnPlateau::load_state_dict, py::arg("state_dict"));
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

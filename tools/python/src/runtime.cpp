// tools/python/src/runtime.cpp - process-wide services: runtime options,
// grad mode, RNG (manual_seed, Generator, get/set_rng_state, fork), autocast
// and GradScaler, memory statistics, the profiler and safetensors files.
// The Python package wraps the RAII guards (no_grad, autocast, fork_rng,
// profile) as context managers over the enter/exit pairs bound here.
#include <memory>
#include <optional>

#include "bind.h"
#include "genesis/amp.hpp"
#include "genesis/autograd.hpp"
#include "genesis/io.hpp"
#include "genesis/memory.hpp"
#include "genesis/optim/optimizer.hpp"
#include "genesis/profiler.hpp"
#include "genesis/random.hpp"

namespace genesis::python {
namespace {

// An autocast region entered by __enter__ and left by __exit__ (the C++ guard's lifetime).
struct AutocastRegion {
  std::string device_type;
  std::optional<DType> dtype;
  bool enabled, cache_enabled;
  std::vector<std::unique_ptr<amp::autocast>> active;  // nested re-entry of the same object
};

// fork_rng's saved states, restored on exit.
struct RngFork {
  std::vector<Device> devices;
  bool enabled;
  std::vector<std::unique_ptr<ForkRng>> active;
};

// ---- autograd (genesis.autograd wraps these: tools/python/genesis/autograd.py)

// Python's list of tensors or Nones as Tensors (None: undefined).
std::vector<Tensor> tensors_or_none(const std::vector<std::optional<Tensor>>& v) {
  std::vector<Tensor> r;
  r.reserve(v.size());
  for (const auto& t : v) r.push_back(t ? *t : Tensor());
  return r;
}

py::tuple tuple_or_none(const std::vector<Tensor>& v) {
  py::tuple r(v.size());
  for (size_t i = 0; i < v.size(); ++i) r[i] = v[i].defined() ? py::cast(v[i]) : py::none();
  return r;
}

void bind_autograd(py::module_& m) {
  py::module_ a = m.def_submodule("autograd", "The autograd engine's entry points (use genesis.autograd)");
  a.def(
      "grad",
      [](const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
         const std::vector<std::optional<Tensor>>& grad_outputs, std::optional<bool> retain_graph, bool create_graph,
         bool allow_unused) {
        const std::vector<Tensor> go = tensors_or_none(grad_outputs);
        std::vector<Tensor> r;
        {
          py::gil_scoped_release nogil;  // hooks and Python Functions take the GIL back
          r = autograd::grad(outputs, inputs, go, retain_graph, create_graph, allow_unused);
        }
        return tuple_or_none(r);
      },
      py::arg("outputs"), py::arg("inputs"), py::arg("grad_outputs"), py::arg("retain_graph"), py::arg("create_graph"),
      py::arg("allow_unused"));
  a.def(
      "backward",
      [](const std::vector<Tensor>& tensors, const std::vector<std::optional<Tensor>>& grad_tensors,
         std::optional<bool> retain_graph, bool create_graph, const std::vector<Tensor>& inputs) {
        const std::vector<Tensor> gt = tensors_or_none(grad_tensors);
        py::gil_scoped_release nogil;
        autograd::backward(tensors, gt, retain_graph, create_graph, inputs);
      },
      py::arg("tensors"), py::arg("grad_tensors"), py::arg("retain_graph"), py::arg("create_graph"), py::arg("inputs"));
  // A Python autograd.Function's node: `backward(grads, unpack)` gets one gradient (or None) per
  // output and a callable giving the saved tensors; it returns one gradient (or None) per input.
  a.def(
      "_record_function",
      [](const std::string& label, const std::vector<Tensor>& inputs, const std::vector<std::optional<Tensor>>& outputs,
         const std::vector<bool>& dirty, const std::vector<std::optional<Tensor>>& to_save, py::function backward) {
        auto fn = keep_callable(std::move(backward));
        const size_t n_inputs = inputs.size();
        auto apply = [fn, n_inputs, label](autograd::Node& node, std::vector<Tensor>& grads) {
          py::gil_scoped_acquire gil;
          auto alive = std::make_shared<bool>(true);
          autograd::Node* np = &node;
          py::cpp_function unpack([np, alive]() {
            if (!*alive) throw py::value_error("saved tensors can only be read while backward runs");
            if (np->released && !np->saved_names.empty()) (void)np->saved_at(0);  // freed: torch's error
            py::tuple t(np->saved_tensors.size());
            for (size_t i = 0; i < np->saved_tensors.size(); ++i) {
              const Tensor& s = np->saved_at(i);
              t[i] = s.defined() ? py::cast(s) : py::none();
            }
            return t;
          });
          py::object r;
          try {
            r = (*fn)(tuple_or_none(grads), unpack);
          } catch (...) {
            *alive = false;
            throw;
          }
          *alive = false;
          std::vector<Tensor> out(n_inputs);
          size_t i = 0;
          for (py::handle g : r) {
            if (i >= n_inputs) break;
            if (!g.is_none()) out[i] = g.cast<Tensor>();
            ++i;
          }
          return out;
        };
        std::vector<Tensor> outs = tensors_or_none(outputs);
        auto node = autograd::record_function(label, inputs, outs, dirty, std::move(apply));
        for (const auto& t : to_save) {
          if (!t) {
            node->save("saved", Tensor());
            continue;
          }
          bool done = false;
          for (size_t j = 0; j < outs.size() && !done; ++j)
            if (outs[j].defined() && outs[j].handle() == t->handle() && !t->requires_grad()) {
              node->save_output("saved", *t, static_cast<uint32_t>(j));
              done = true;
            }
          if (!done) node->save("saved", *t);
        }
        return py::make_tuple(node, tuple_or_none(outs));
      },
      py::arg("label"), py::arg("inputs"), py::arg("outputs"), py::arg("dirty"), py::arg("to_save"),
      py::arg("backward"));
  a.def("_in_create_graph", &autograd::in_create_graph, "True while a backward that records itself runs");
}

}  // namespace

void bind_runtime(py::module_& m) {
  // ---- runtime
  m.def(
      "init",
      [](const std::string& plugin_path, const std::string& plugins, const std::string& backends, bool quiet,
         int num_threads) {
        if (num_threads < 0) throw py::value_error("init: num_threads must be positive (or 0 for the default)");
        init({.plugin_path = plugin_path,
              .plugins = plugins,
              .backends = backends,
              .quiet = quiet,
              .num_threads = num_threads});
      },
      py::kw_only(), py::arg("plugin_path") = "", py::arg("plugins") = "", py::arg("backends") = "",
      py::arg("quiet") = true, py::arg("num_threads") = 0,
      "Creates the runtime with these options (before any other call); default: every plugin found");

  // ---- grad mode
  m.def("is_grad_enabled", &autograd::grad_enabled);
  m.def("set_grad_enabled", &autograd::set_grad_enabled, py::arg("mode"));
  bind_autograd(m);

  // ---- RNG
  py::class_<RngState>(m, "RngState")
      .def_readonly("device", &RngState::device)
      .def_readonly("seed", &RngState::seed)
      .def_readonly("offset", &RngState::offset)
      .def("__eq__", [](const RngState& a, const RngState& b) { return a == b; })
      .def("__repr__", [](const RngState& s) {
        return "RngState(device='" + s.device.str() + "', seed=" + std::to_string(s.seed) +
               ", offset=" + std::to_string(s.offset) + ")";
      });
  py::class_<Generator>(m, "Generator")
      .def(py::init([](py::handle device) {
             if (!device.is_none() && to_device(device).type() != "cpu")
               throw py::value_error("Generator: only CPU generators are supported (device streams use manual_seed)");
             return Generator();
           }),
           py::arg("device") = py::none())
      .def(
          "manual_seed", [](Generator& g, uint64_t seed) -> Generator& { return g.manual_seed(seed); },
          py::return_value_policy::reference_internal, py::arg("seed"))
      .def("initial_seed", &Generator::initial_seed)
      .def("get_state", &Generator::get_state)
      .def(
          "set_state",
          [](Generator& g, const RngState& s) -> Generator& {
            g.set_state(s);
            return g;
          },
          py::return_value_policy::reference_internal, py::arg("new_state"))
      .def_property_readonly("offset", &Generator::offset);
  m.def(
      "manual_seed", [](uint64_t seed) { manual_seed(seed); }, py::arg("seed"),
      "Seeds the default generator of every device");
  m.def(
      "set_num_threads",
      [](int n) {
        if (n < 1)
          throw py::value_error("set_num_threads: the number of threads must be positive, got " + std::to_string(n));
        set_num_threads(n);
      },
      py::arg("n"), "Sets the CPU backend's thread count (torch.set_num_threads)");
  m.def("get_num_threads", &get_num_threads, "The CPU backend's thread count in effect (torch.get_num_threads)");
  m.def(
      "get_rng_state", [](py::handle device) { return get_rng_state(device.is_none() ? Device() : to_device(device)); },
      py::arg("device") = py::none());
  m.def(
      "set_rng_state",
      [](const RngState& s, py::handle device) {
        if (device.is_none())
          set_rng_state(s);
        else
          set_rng_state(s, to_device(device));
      },
      py::arg("new_state"), py::arg("device") = py::none());
  m.def("get_all_rng_states", &get_all_rng_states);
  m.def("set_all_rng_states", &set_all_rng_states, py::arg("states"));
  py::class_<RngFork>(m, "_RngFork")
      .def(py::init([](py::handle devices, bool enabled) {
             RngFork f{{}, enabled, {}};
             if (!devices.is_none())
               for (py::handle d : devices) f.devices.push_back(to_device(d));
             return f;
           }),
           py::arg("devices") = py::none(), py::arg("enabled") = true)
      .def("__enter__", [](RngFork& f) { f.active.push_back(std::make_unique<ForkRng>(f.devices, f.enabled)); })
      .def("__exit__", [](RngFork& f, py::args) {
        if (!f.active.empty()) f.active.pop_back();
        return false;
      });

  // ---- autocast and GradScaler
  py::class_<AutocastRegion>(m, "_Autocast")
      .def(py::init([](const std::string& device_type, std::optional<DType> dtype, bool enabled, bool cache_enabled) {
             return AutocastRegion{device_type, dtype, enabled, cache_enabled, {}};
           }),
           py::arg("device_type") = "cuda", py::arg("dtype") = py::none(), py::arg("enabled") = true,
           py::arg("cache_enabled") = true)
      .def("__enter__",
           [](AutocastRegion& a) {
             a.active.push_back(std::make_unique<amp::autocast>(a.device_type, a.dtype, a.enabled, a.cache_enabled));
           })
      .def("__exit__", [](AutocastRegion& a, py::args) {
        if (!a.active.empty()) a.active.pop_back();
        return false;
      });
  m.def("is_autocast_enabled", &amp::is_autocast_enabled, py::arg("device_type") = "cuda");
  m.def("get_autocast_dtype", &amp::get_autocast_dtype, py::arg("device_type") = "cuda");
  py::class_<amp::GradScaler>(m, "GradScaler")
      .def(py::init([](double init_scale, double growth_factor, double backoff_factor, int64_t growth_interval,
                       bool enabled) {
             return std::make_unique<amp::GradScaler>(
                 amp::GradScalerOptions{init_scale, growth_factor, backoff_factor, growth_interval, enabled});
           }),
           py::arg("init_scale") = 65536.0, py::arg("growth_factor") = 2.0, py::arg("backoff_factor") = 0.5,
           py::arg("growth_interval") = 2000, py::arg("enabled") = true)
      .def("scale", &amp::GradScaler::scale, py::arg("outputs"))
      .def("unscale_", &amp::GradScaler::unscale_, py::arg("optimizer"))
      .def("step", &amp::GradScaler::step, py::arg("optimizer"))
      .def("update", &amp::GradScaler::update, py::arg("new_scale") = py::none())
      .def("get_scale", &amp::GradScaler::get_scale)
      .def("is_enabled", &amp::GradScaler::is_enabled)
      .def("get_growth_factor", &amp::GradScaler::get_growth_factor)
      .def("get_backoff_factor", &amp::GradScaler::get_backoff_factor)
      .def("get_growth_interval", &amp::GradScaler::get_growth_interval)
      .def("state_dict", &amp::GradScaler::state_dict)
      .def("load_state_dict", &amp::GradScaler::load_state_dict, py::arg("state_dict"));

  // ---- memory statistics (device None = cpu)
  auto dev = [](py::handle d) { return d.is_none() ? Device() : to_device(d); };
  m.def(
      "memory_stats",
      [dev](py::handle d) {
        MemoryStats s = memory_stats(dev(d));
        py::dict out;
        out["allocated"] = s.allocated;
        out["reserved"] = s.reserved;
        out["peak_allocated"] = s.peak_allocated;
        out["peak_reserved"] = s.peak_reserved;
        out["num_allocs"] = s.num_allocs;
        out["num_frees"] = s.num_frees;
        out["cache_hits"] = s.cache_hits;
        out["cache_misses"] = s.cache_misses;
        out["cache_hit_rate"] = s.cache_hit_rate();
        out["oom_retries"] = s.oom_retries;
        out["active_blocks"] = s.active_blocks;
        return out;
      },
      py::arg("device") = py::none());
  m.def(
      "memory_allocated", [dev](py::handle d) { return memory_allocated(dev(d)); }, py::arg("device") = py::none());
  m.def(
      "memory_reserved", [dev](py::handle d) { return memory_reserved(dev(d)); }, py::arg("device") = py::none());
  m.def(
      "max_memory_allocated", [dev](py::handle d) { return max_memory_allocated(dev(d)); },
      py::arg("device") = py::none());
  m.def(
      "max_memory_reserved", [dev](py::handle d) { return max_memory_reserved(dev(d)); },
      py::arg("device") = py::none());
  m.def(
      "empty_cache", [dev](py::handle d) { empty_cache(dev(d)); }, py::arg("device") = py::none());
  m.def(
      "reset_peak_memory_stats", [dev](py::handle d) { reset_peak_memory_stats(dev(d)); },
      py::arg("device") = py::none());
  m.def(
      "memory_summary", [dev](py::handle d) { return memory_summary(dev(d)); }, py::arg("device") = py::none());
  m.def(
      "device_count",
      [](const std::string& type) {
        int32_t n = 0;
        for (const Device& d : all_devices()) n += d.type() == type ? 1 : 0;
        return n;
      },
      py::arg("type") = "cuda");

  // ---- profiler
  m.def("profiler_start", &profiler_start);
  m.def("profiler_stop", &profiler_stop);
  m.def("profiler_export_chrome_trace", &profiler_export_chrome_trace, py::arg("path"));
  m.def("profiler_summary", &profiler_summary);

  // ---- safetensors (state dicts: dict[str, Tensor])
  m.def(
      "save",
      [](const TensorMap& sd, const std::string& path) {
        py::gil_scoped_release nogil;
        save(sd, path);
      },
      py::arg("state_dict"), py::arg("path"), "Writes a state dict as safetensors (atomically)");
  m.def(
      "load",
      [](const std::string& path, py::handle device) {
        const Device d = device.is_none() ? Device() : to_device(device);
        py::gil_scoped_release nogil;
        return load(path, d);
      },
      py::arg("path"), py::arg("map_location") = py::none(), "Reads a safetensors file as a dict of tensors");
  m.def(
      "save_file",
      [](const TensorMap& t, const std::string& path, std::optional<StringMap> meta) {
        py::gil_scoped_release nogil;
        save_safetensors(path, t, meta.value_or(StringMap{}));
      },
      py::arg("tensors"), py::arg("filename"), py::arg("metadata") = py::none());
  m.def(
      "load_file",
      [](const std::string& path, py::handle device) {
        const Device d = device.is_none() ? Device() : to_device(device);
        py::gil_scoped_release nogil;
        return load_safetensors(path, d).tensors;
      },
      py::arg("filename"), py::arg("device") = py::none());
  m.def("load_metadata", &load_safetensors_metadata, py::arg("filename"));
}

}  // namespace genesis::python

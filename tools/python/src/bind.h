// tools/python/src/bind.h - what the binding files of the genesis._C
// extension share: the pybind11 includes, argument conversions (numbers,
// shapes, dims, devices) and the registration function of each file.
//
// The extension wraps the C++ frontend (genesis::Tensor and friends) one to
// one; the Python package (tools/python/genesis/) adds what is easier in
// Python: nn.Module, the layer classes, context managers and keyword sugar.
#pragma once

#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "genesis/tensor.hpp"

namespace py = pybind11;

namespace genesis::python {

// ---- conversions (tensor.cpp)

/** A Python number (bool, int, float) as a Scalar; throws TypeError for anything else. */
Scalar to_scalar(py::handle o);
/** True for bool, int and float objects (and NumPy scalars that convert to them). */
bool is_number(py::handle o);
/** A shape from `*size` arguments: ints, or one tuple/list/torch.Size of ints. */
Shape shape_from_args(const py::args& args);
/** A shape from an int or a sequence of ints. */
Shape shape_from_object(py::handle o);
/** Reduction dims from None (all), an int, or a sequence of ints. */
Dims dims_from_object(py::handle o);
/** A Tensor from a Tensor or a Python number (a 0-d tensor on `like`'s device and kind). */
Tensor as_tensor_like(py::handle o, const Tensor& like);
/** The Python value of a one-element tensor: bool, int or float by dtype. */
py::object item_object(const Tensor& t);
/** Creation options from the usual keywords (dtype, device may be None or a string). */
Options make_options(py::handle dtype, py::handle device, bool requires_grad);
/** A new tensor holding a copy of data (lists, numbers, buffers, tensors), as torch.tensor. */
Tensor tensor_from_object(py::handle data, const Options& o);
/** Holds a Python callable; drops it under the GIL wherever the last owner dies (backward runs without it). */
std::shared_ptr<py::function> keep_callable(py::function f);
/** A Device from a Device, a string such as "cuda:0", or an int (a CUDA ordinal). */
Device to_device(py::handle o);

// ---- registration, one function per binding file

void bind_dtype_device(py::module_& m);  // tensor.cpp: DType, Device, errors
void bind_tensor(py::module_& m);        // tensor.cpp: the Tensor class (metadata, autograd)
void bind_tensor_math(py::module_& m);   // tensor_math.cpp: operators and methods
void bind_indexing(py::module_& m);      // indexing.cpp: __getitem__ / __setitem__
void bind_creation(py::module_& m);      // creation.cpp: tensor(), zeros, rand, ...
void bind_dlpack(py::module_& m);        // dlpack.cpp: __dlpack__, from_dlpack, numpy()
void bind_functional(py::module_& m);    // functional.cpp: nn.functional and free ops
void bind_nn(py::module_& m);            // nn.cpp: init, C++ layers wrapped by Python ones
void bind_optim(py::module_& m);         // optim.cpp: optimizers, schedulers, clipping
void bind_runtime(py::module_& m);       // runtime.cpp: RNG, no_grad, amp, memory, profiler, io
void bind_models(py::module_& m);        // models.cpp: Qwen, tokenizer, generation, SFT
void bind_serving(py::module_& m);       // serving.cpp: the offline LLM over the serving engine
void bind_peft(py::module_& m);          // peft.cpp: LoRA adapters in PEFT's format
void bind_data(py::module_& m);          // data.cpp: Fashion-MNIST, DataLoader
void bind_distributed(py::module_& m);   // distributed.cpp: process groups, collectives, DDP, sampler
void bind_algorithms(py::module_& m);    // algorithms.cpp: cumsum, order statistics, unique, searches
void bind_linalg(py::module_& m);        // linalg.cpp: _C.linalg (solve, inv, det, qr, svd, ...), Tensor.det
void bind_errors(py::module_& m);        // errors.cpp: torch's TypeErrors for bad calls (call it last)
/** genesis::Error as the exception torch raises (errors.cpp); registered first, so more specific translators win. */
void register_error_translator();

}  // namespace genesis::python

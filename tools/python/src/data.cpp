// tools/python/src/data.cpp - genesis.data's C++ side: Fashion-MNIST from
// IDX files and the deterministic DataLoader (epoch e's order depends only on
// (seed, e), as in the C++ examples, so Python and C++ runs see the same batches).
#include "bind.h"
#include "genesis/data/dataloader.hpp"
#include "genesis/data/fashion_mnist.hpp"

namespace genesis::python {

void bind_data(py::module_& m) {
  py::module_ d = m.def_submodule("data", "genesis.data's C++ side");
  d.attr("FASHION_MNIST_ROOT") = data::kFashionMNISTDefaultRoot;
  d.def(
      "fashion_mnist",
      [](const std::string& root, bool train, bool flatten, py::handle device) {
        data::MNISTOptions o;
        o.flatten = flatten;
        if (!device.is_none()) o.device = to_device(device);
        py::gil_scoped_release nogil;
        data::FashionMNIST ds(root, train, o);
        return std::make_pair(ds.images(), ds.labels());
      },
      py::arg("root") = data::kFashionMNISTDefaultRoot, py::arg("train") = true, py::arg("flatten") = false,
      py::arg("device") = py::none(), "(images (N,1,28,28) f32 in [0,1], labels (N,) int64) of a split");
  d.def("fashion_mnist_available", &data::FashionMNIST::available, py::arg("root") = data::kFashionMNISTDefaultRoot,
        py::arg("train") = true);
  d.def("fashion_mnist_classes", &data::FashionMNIST::classes);
  py::class_<data::DataLoader>(d, "DataLoader")
      .def(py::init([](const std::vector<Tensor>& tensors, int64_t batch_size, bool shuffle, bool drop_last,
                       uint64_t seed, int num_replicas, int rank) {
             auto ds = std::make_shared<data::TensorDataset>(tensors);
             data::DataLoaderOptions o;
             o.batch_size = batch_size;
             o.shuffle = shuffle;
             o.drop_last = drop_last;
             o.seed = seed;
             o.num_replicas = num_replicas;
             o.rank = rank;
             return std::make_unique<data::DataLoader>(ds, o);
           }),
           py::arg("tensors"), py::arg("batch_size") = 1, py::arg("shuffle") = false, py::arg("drop_last") = false,
           py::arg("seed") = 0, py::arg("num_replicas") = 1, py::arg("rank") = 0)
      .def("__len__", &data::DataLoader::size)
      .def("num_examples", &data::DataLoader::num_examples)
      .def("indices", &data::DataLoader::indices, py::arg("epoch"))
      .def("batch", &data::DataLoader::batch, py::arg("epoch"), py::arg("index"))
      .def_property("epoch", &data::DataLoader::epoch, &data::DataLoader::set_epoch);
}

}  // namespace genesis::python

// genesis/data/fashion_mnist.hpp - the Fashion-MNIST (and MNIST) dataset from IDX files.
//
//   data::FashionMNIST test("/usr/share/datasets/fashion-mnist", /*train=*/false);
//   test.size() == 10000; test.get(0) == {image (1,28,28) f32 in [0,1], label i64 0-d}
#pragma once

#include <string>

#include "genesis/data/dataset.hpp"

namespace genesis::data {

/** Where Debian's dataset-fashion-mnist package installs the files. */
inline constexpr const char* kFashionMNISTDefaultRoot = "/usr/share/datasets/fashion-mnist";

/** Fashion-MNIST options. */
struct MNISTOptions {
  bool flatten = false;  ///< images as (784,) instead of (1,28,28)
  Device device;         ///< where the whole dataset lives (CPU by default)
};

/** MNIST-format dataset: {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz] under root. */
class FashionMNIST : public TensorDataset {
 public:
  /** Loads the train (60000) or test (10000) split; throws genesis::Error naming missing files. */
  FashionMNIST(const std::string& root = kFashionMNISTDefaultRoot, bool train = true, MNISTOptions options = {});
  /** All images, (N,1,28,28) or (N,784), f32 in [0,1]. */
  const Tensor& images() const { return tensors()[0]; }
  /** All labels, (N,) int64 in 0..9. */
  const Tensor& labels() const { return tensors()[1]; }
  /** The ten class names ("T-shirt/top", ..., "Ankle boot"). */
  static const std::vector<std::string>& classes();
  /** True when root holds the split's two files (plain or .gz). */
  static bool available(const std::string& root = kFashionMNISTDefaultRoot, bool train = true);
};

/** Same files, same format: the original MNIST digits. */
using MNIST = FashionMNIST;

}  // namespace genesis::data

// fashion_mnist.cpp - the Fashion-MNIST / MNIST IDX files as a TensorDataset.
#include "genesis/data/fashion_mnist.hpp"

#include <sys/stat.h>

#include "genesis/data/idx.hpp"

namespace genesis::data {

namespace {

bool exists(const std::string& p) {
  struct stat s {};
  return ::stat(p.c_str(), &s) == 0 && S_ISREG(s.st_mode);
}

// root/name or root/name.gz ("" when neither exists).
std::string find(const std::string& root, const std::string& name) {
  for (const std::string& p : {root + "/" + name, root + "/" + name + ".gz"})
    if (exists(p)) return p;
  return "";
}

std::string prefix(bool train) { return train ? "train" : "t10k"; }

}  // namespace

bool FashionMNIST::available(const std::string& root, bool train) {
  return !find(root, prefix(train) + "-images-idx3-ubyte").empty() &&
         !find(root, prefix(train) + "-labels-idx1-ubyte").empty();
}

const std::vector<std::string>& FashionMNIST::classes() {
  static const std::vector<std::string> c = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                             "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  return c;
}

FashionMNIST::FashionMNIST(const std::string& root, bool train, MNISTOptions options) {
  const std::string in = prefix(train) + "-images-idx3-ubyte", ln = prefix(train) + "-labels-idx1-ubyte";
  const std::string ip = find(root, in), lp = find(root, ln);
  if (ip.empty() || lp.empty())
    throw Error(GN_ERR_NOT_FOUND, "[FashionMNIST] " + root + ": missing " + (ip.empty() ? in : ln) +
                                      "[.gz] (Debian: apt-get install dataset-fashion-mnist)");
  Tensor img = read_idx(ip), lab = read_idx(lp);
  if (img.dtype() != DType::u8 || img.dim() != 3)
    throw Error(GN_ERR_IO, "[FashionMNIST] " + ip + ": expected u8 images (N,H,W)");
  if (lab.dtype() != DType::u8 || lab.dim() != 1)
    throw Error(GN_ERR_IO, "[FashionMNIST] " + lp + ": expected u8 labels (N)");
  if (img.size(0) != lab.size(0))
    throw Error(GN_ERR_IO, "[FashionMNIST] " + root + ": " + std::to_string(img.size(0)) + " images but " +
                               std::to_string(lab.size(0)) + " labels");
  const int64_t n = img.size(0), h = img.size(1), w = img.size(2);
  Tensor x = img.to(DType::f32) / 255.0;
  x = options.flatten ? x.reshape({n, h * w}) : x.reshape({n, 1, h, w});
  set_tensors({x.to(options.device), lab.to(DType::i64).to(options.device)});
}

}  // namespace genesis::data

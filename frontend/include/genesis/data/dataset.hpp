// genesis/data/dataset.hpp - map-style datasets (torch.utils.data.Dataset).
#pragma once

#include <cstdint>
#include <vector>

#include "genesis/tensor.hpp"

namespace genesis::data {

/** One example, or one batch: a tuple of tensors (e.g. {image, label}). */
using Example = std::vector<Tensor>;

/** A map-style dataset: size() examples, each a tuple of tensors of fixed shapes. */
class Dataset {
 public:
  virtual ~Dataset() = default;
  /** Number of examples. */
  virtual int64_t size() const = 0;
  /** Example i (0 <= i < size()). */
  virtual Example get(int64_t i) const = 0;
  /** The examples at indices stacked along a new dim 0 (override for speed). */
  virtual Example get_batch(const std::vector<int64_t>& indices) const;
};

/** Stacks each field of the examples along a new dim 0 (the default collate). */
Example collate(const std::vector<Example>& examples);
/** Stacks same-shaped tensors along a new dim (torch.stack). */
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
/** Rows of x at int64 indices along dim (torch.index_select). */
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& indices);

/** Examples are the rows of tensors sharing dim 0 (torch TensorDataset); batches are one gather per field. */
class TensorDataset : public Dataset {
 public:
  /** Wraps tensors whose dim 0 sizes agree (throws otherwise). */
  explicit TensorDataset(std::vector<Tensor> tensors);
  /** Number of rows. */
  int64_t size() const override;
  /** Row i of every tensor. */
  Example get(int64_t i) const override;
  /** The rows of every tensor: one memcpy per row for dense host tensors, an index_select op elsewhere. */
  Example get_batch(const std::vector<int64_t>& indices) const override;
  /** The wrapped tensors. */
  const std::vector<Tensor>& tensors() const { return tensors_; }

 protected:
  TensorDataset() = default;
  /** Sets the tensors after construction (for subclasses that load first). */
  void set_tensors(std::vector<Tensor> tensors);

 private:
  std::vector<Tensor> tensors_;
};

}  // namespace genesis::data

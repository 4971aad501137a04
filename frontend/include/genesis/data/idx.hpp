// genesis/data/idx.hpp - IDX files (the MNIST / Fashion-MNIST format), plain or gzip'd.
//
// Layout: magic 0x00 0x00 <type> <ndim>, ndim big-endian u32 sizes, then the
// elements big-endian.  Types: 0x08 u8, 0x09 i8, 0x0B i16 (read as i32),
// 0x0C i32, 0x0D f32, 0x0E f64.
#pragma once

#include <string>

#include "genesis/tensor.hpp"

namespace genesis::data {

/** Reads an IDX file (gzip-compressed or not, detected from the content) into a CPU tensor. */
Tensor read_idx(const std::string& path, const Device& device = Device());
/** Writes t as an IDX file (u8, i8, i32, f32, f64), gzip-compressed when gzip; atomic. */
void write_idx(const std::string& path, const Tensor& t, bool gzip = false);

}  // namespace genesis::data

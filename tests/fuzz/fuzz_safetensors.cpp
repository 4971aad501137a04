// fuzz_safetensors.cpp - any bytes as a safetensors image: the reader either
// refuses them with a genesis::Error or returns tensors that write back and
// read again to the same names, shapes, dtypes and metadata.
#include "fuzz_common.h"
#include "genesis/io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::init_runtime();
  genesis::SafetensorsFile f;
  try {
    f = genesis::safetensors_deserialize(fuzz::bytes(data, size));
  } catch (const genesis::Error&) {
    return 0;
  }
  const genesis::SafetensorsFile g =
      genesis::safetensors_deserialize(genesis::safetensors_serialize(f.tensors, f.metadata));
  if (g.metadata != f.metadata || g.tensors.size() != f.tensors.size()) __builtin_trap();
  for (const auto& [name, t] : f.tensors) {
    const genesis::Tensor& u = g.tensors.at(name);
    if (u.shape() != t.shape() || u.dtype() != t.dtype()) __builtin_trap();
  }
  return 0;
}

// fuzz_checkpoint.cpp - any bytes as a checkpoint file: load_checkpoint either
// refuses them with a genesis::Error or returns a checkpoint.  The bytes go
// through a memfd, so the file path, mapping and regular-file checks run too.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>

#include "fuzz_common.h"
#include "genesis/io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::init_runtime();
  static const int fd = ::memfd_create("genesis_fuzz_checkpoint", 0);
  static const std::string path = "/proc/self/fd/" + std::to_string(fd);
  if (fd < 0 || ::ftruncate(fd, 0) != 0) std::abort();
  for (size_t done = 0; done < size;) {
    const ssize_t w = ::pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    if (w <= 0) std::abort();
    done += static_cast<size_t>(w);
  }
  try {
    const genesis::Checkpoint c = genesis::load_checkpoint(path);
    (void)c;
  } catch (const genesis::Error&) {
  }
  return 0;
}

// sdk/support/atomic_file.h - atomic file replacement, shared by the core (profiler traces) and the
// frontend (safetensors, checkpoints, config files).  Compiled into each library with hidden
// symbols: an internal building block below both layers, not part of any public API.
//
// The bytes go to a temporary file ".<name>.tmp.XXXXXX" in the target's directory, which is
// fsync'd and renamed over the target, so a reader sees the old file or the whole new one, never
// a part.  A writer holds an exclusive flock on its temporary file until the rename; the kernel
// drops it when the writer dies, so the next writer of the same path removes the temporary files
// of killed writers (a file whose lock it can take).
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace genesis::support {

// What went wrong, without the path (callers prefix it in their own message style).
struct FileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class AtomicFileWriter {
 public:
  // Removes stale temporary files of the same path, then creates and locks a new one.
  explicit AtomicFileWriter(const std::string& path);
  // Appends n bytes (buffered).
  void write(const void* data, size_t n);
  // Overwrites n bytes at offset (bytes from the start of the file), which must already be written.
  void overwrite(uint64_t offset, const void* data, size_t n);
  // Flushes, fsyncs and renames over the path, then fsyncs the directory.
  void commit();
  // Without a commit, the temporary file is removed.
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

 private:
  void flush();
  std::string path_, dir_, tmp_;
  int fd_ = -1;
  int lock_fd_ = -1;      // a second descriptor holding the flock until after the rename
  uint64_t written_ = 0;  // bytes written to fd_ (not counting buf_)
  std::vector<char> buf_;
  bool committed_ = false;
};

// The whole of `bytes` as path, atomically.
void write_file_atomic(const std::string& path, const std::string& bytes);

}  // namespace genesis::support

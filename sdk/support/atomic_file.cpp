// sdk/support/atomic_file.cpp - AtomicFileWriter: temporary file, flock, fsync, rename (atomic_file.h).
#include "atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace genesis::support {

namespace {

constexpr size_t kBuffer = size_t(1) << 20;  // bytes gathered before a write(2)

[[noreturn]] void fail(const std::string& what) { throw FileError(what + ": " + std::strerror(errno)); }

// Removes ".<base>.tmp.XXXXXX" files in dir whose flock can be taken: their writers died before
// the rename.  (Two processes writing the same path at once were never safe: the last rename wins.)
void remove_stale_temps(const std::string& dir, const std::string& base) {
  const std::string prefix = "." + base + ".tmp.";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() != prefix.size() + 6 || name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string p = dir + "/" + name;
    const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) continue;
    struct stat s {};
    if (::fstat(fd, &s) == 0 && S_ISREG(s.st_mode) && ::flock(fd, LOCK_EX | LOCK_NB) == 0) ::unlink(p.c_str());
    ::close(fd);
  }
  ::closedir(d);
}

void write_all(int fd, const char* p, size_t n, uint64_t offset, bool positioned) {
  while (n) {
    const ssize_t w = positioned ? ::pwrite(fd, p, n, static_cast<off_t>(offset)) : ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) fail("write failed");
    p += w;
    n -= static_cast<size_t>(w);
    offset += static_cast<uint64_t>(w);
  }
}

}  // namespace

AtomicFileWriter::AtomicFileWriter(const std::string& path) : path_(path) {
  const size_t slash = path.find_last_of('/');
  dir_ = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (base.empty()) throw FileError("the path names a directory, not a file");
  remove_stale_temps(dir_, base);
  tmp_ = dir_ + "/." + base + ".tmp.XXXXXX";
  fd_ = ::mkstemp(tmp_.data());
  if (fd_ < 0) fail("cannot create a temporary file in " + dir_);
  lock_fd_ = ::open(tmp_.c_str(), O_RDONLY | O_CLOEXEC);
  if (lock_fd_ >= 0) ::flock(lock_fd_, LOCK_EX);
  ::fchmod(fd_, 0644);
  buf_.reserve(kBuffer);
}

void AtomicFileWriter::flush() {
  write_all(fd_, buf_.data(), buf_.size(), 0, false);
  written_ += buf_.size();
  buf_.clear();
}

void AtomicFileWriter::write(const void* data, size_t n) {
  const char* c = static_cast<const char*>(data);
  if (buf_.size() + n > kBuffer) flush();
  if (n >= kBuffer) {
    write_all(fd_, c, n, 0, false);
    written_ += n;
  } else {
    buf_.insert(buf_.end(), c, c + n);
  }
}

void AtomicFileWriter::overwrite(uint64_t offset, const void* data, size_t n) {
  if (offset + n > written_ + buf_.size())
    throw FileError("cannot overwrite bytes " + std::to_string(offset) + ".." + std::to_string(offset + n) + ": only " +
                    std::to_string(written_ + buf_.size()) + " are written");
  flush();
  write_all(fd_, static_cast<const char*>(data), n, offset, true);
}

void AtomicFileWriter::commit() {
  flush();
  if (::fsync(fd_) != 0) fail("fsync failed");
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("close failed");
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) fail("rename failed");
  committed_ = true;
  const int d = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);  // makes the rename durable
  if (d >= 0) {
    ::fsync(d);
    ::close(d);
  }
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(tmp_.c_str());
  if (lock_fd_ >= 0) ::close(lock_fd_);  // drops the flock, after the rename or the unlink
}

void write_file_atomic(const std::string& path, const std::string& bytes) {
  AtomicFileWriter w(path);
  w.write(bytes.data(), bytes.size());
  w.commit();
}

}  // namespace genesis::support

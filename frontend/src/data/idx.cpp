// idx.cpp - IDX reader/writer (MNIST format), gzip through zlib.
#include "genesis/data/idx.hpp"

#include <sys/stat.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "genesis/io.hpp"

namespace genesis::data {

namespace {

[[noreturn]] void fail(const std::string& file, const std::string& problem) {
  throw Error(GN_ERR_IO, "[idx] " + file + ": " + problem);
}

// The whole (decompressed) content; gzread passes plain files through.
std::string slurp(const std::string& path) {
  // Opening a FIFO would wait for a writer: only regular files are read.
  struct stat s {};
  if (::stat(path.c_str(), &s) == 0 && !S_ISREG(s.st_mode))
    fail(path,
         S_ISDIR(s.st_mode) ? "is a directory" : "is not a regular file (a FIFO, device or socket cannot be read)");
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) fail(path, std::string("cannot open: ") + std::strerror(errno));
  std::string out;
  std::vector<char> buf(1 << 20);
  for (;;) {
    const int n = gzread(f, buf.data(), static_cast<unsigned>(buf.size()));
    if (n < 0) {
      int code = 0;
      std::string msg = gzerror(f, &code);
      gzclose(f);
      fail(path, "read error: " + msg);
    }
    if (n == 0) break;
    out.append(buf.data(), static_cast<size_t>(n));
  }
  int code = 0;
  const char* msg = gzerror(f, &code);
  if (code != Z_OK && code != Z_STREAM_END) {
    std::string m = msg;
    gzclose(f);
    fail(path, "corrupt or truncated gzip stream: " + m);
  }
  const int rc = gzclose(f);
  if (rc != Z_OK) fail(path, "corrupt or truncated gzip stream (gzclose " + std::to_string(rc) + ")");
  return out;
}

struct TypeInfo {
  unsigned char code;
  size_t size;  // bytes per element in the file
  DType dtype;  // tensor dtype
};
constexpr TypeInfo kTypes[] = {
    {0x08, 1, DType::u8},  {0x09, 1, DType::i8},  {0x0B, 2, DType::i32},
    {0x0C, 4, DType::i32}, {0x0D, 4, DType::f32}, {0x0E, 8, DType::f64},
};

uint32_t be32(const unsigned char* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

std::string gzip_bytes(const std::string& in, const std::string& path) {
  z_stream z{};
  if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) fail(path, "deflateInit2 failed");
  std::string out(deflateBound(&z, in.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  const size_t n = z.total_out;
  deflateEnd(&z);
  if (rc != Z_STREAM_END) fail(path, "gzip compression failed");
  out.resize(n);
  return out;
}

}  // namespace

Tensor read_idx(const std::string& path, const Device& device) {
  const std::string b = slurp(path);
  const auto* p = reinterpret_cast<const unsigned char*>(b.data());
  if (b.size() < 4) fail(path, "truncated: " + std::to_string(b.size()) + " bytes, no IDX magic");
  if (p[0] != 0 || p[1] != 0) fail(path, "bad magic (expected 0x00 0x00 <type> <ndim>): not an IDX file");
  const TypeInfo* ti = nullptr;
  for (const TypeInfo& t : kTypes)
    if (t.code == p[2]) ti = &t;
  if (!ti) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02X", p[2]);
    fail(path, std::string("unknown IDX element type ") + hex);
  }
  const size_t ndim = p[3];
  if (b.size() < 4 + 4 * ndim) fail(path, "truncated in the dimension sizes");
  Shape shape;
  uint64_t numel = 1;
  for (size_t i = 0; i < ndim; ++i) {
    const uint32_t d = be32(p + 4 + 4 * i);
    shape.push_back(d);
    numel *= d;
    if (numel > (1ull << 40)) fail(path, "dimension sizes are implausibly large");
  }
  const size_t start = 4 + 4 * ndim;
  const uint64_t need = numel * ti->size;
  if (b.size() - start < need)
    fail(path, "truncated: the dims need " + std::to_string(need) + " bytes of data, the file has " +
                   std::to_string(b.size() - start));
  if (b.size() - start > need) fail(path, std::to_string(b.size() - start - need) + " unexpected bytes after the data");
  std::vector<unsigned char> host(numel * gn_dtype_size(static_cast<int32_t>(ti->dtype)));
  const unsigned char* d = p + start;
  for (uint64_t i = 0; i < numel; ++i) {
    const unsigned char* e = d + i * ti->size;
    switch (ti->code) {
      case 0x08:
      case 0x09: host[i] = e[0]; break;
      case 0x0B: {
        const int32_t v = static_cast<int16_t>((uint16_t(e[0]) << 8) | e[1]);
        std::memcpy(&host[i * 4], &v, 4);
        break;
      }
      default:  // 4- or 8-byte big-endian: reverse into host (little-endian) order
        for (size_t k = 0; k < ti->size; ++k) host[i * ti->size + k] = e[ti->size - 1 - k];
    }
  }
  gn_tensor* h = nullptr;
  check(gn_tensor_from_host(runtime(), host.data(), shape.data(), static_cast<int32_t>(shape.size()),
                            static_cast<int32_t>(ti->dtype), device.c(), &h),
        ("idx: " + path).c_str());
  return Tensor::adopt(h);
}

void write_idx(const std::string& path, const Tensor& t, bool gzip) {
  unsigned char code = 0;
  switch (t.dtype()) {
    case DType::u8: code = 0x08; break;
    case DType::i8: code = 0x09; break;
    case DType::i32: code = 0x0C; break;
    case DType::f32: code = 0x0D; break;
    case DType::f64: code = 0x0E; break;
    default: fail(path, std::string("IDX cannot hold dtype ") + dtype_name(t.dtype()));
  }
  if (t.dim() > 255) fail(path, "too many dims for IDX");
  const size_t es = gn_dtype_size(static_cast<int32_t>(t.dtype()));
  std::vector<unsigned char> host(static_cast<size_t>(t.numel()) * es);
  if (!host.empty()) check(gn_tensor_to_host(t.handle(), host.data(), host.size()), "write_idx");
  std::string out = {'\0', '\0', static_cast<char>(code), static_cast<char>(t.dim())};
  for (int64_t s : t.shape()) {
    if (s > 0xFFFFFFFFll) fail(path, "a dim is too large for IDX");
    for (int k = 3; k >= 0; --k) out.push_back(static_cast<char>((static_cast<uint64_t>(s) >> (8 * k)) & 0xFF));
  }
  const size_t start = out.size();
  out.resize(start + host.size());
  for (size_t i = 0; i < host.size(); i += es)
    for (size_t k = 0; k < es; ++k) out[start + i + k] = static_cast<char>(host[i + es - 1 - k]);
  atomic_write_file(path, gzip ? gzip_bytes(out, path) : out);
}

}  // namespace genesis::data

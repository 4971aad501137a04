// fuzz_tokenizer_json.cpp - any bytes as a tokenizer.json: Tokenizer::from_files either refuses
// them with a genesis::Error or returns a tokenizer, which then encodes and decodes text (a fixed
// multilingual line and the input's own first bytes, which need not be UTF-8) and streams the ids
// back; ids outside the vocabulary must be refused.  The bytes go through a memfd, so the file reading runs too.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>

#include "fuzz_common.h"
#include "genesis/tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const int fd = ::memfd_create("genesis_fuzz_tokenizer", 0);
  static const std::string path = "/proc/self/fd/" + std::to_string(fd);
  if (fd < 0 || ::ftruncate(fd, 0) != 0) std::abort();
  for (size_t done = 0; done < size;) {
    const ssize_t w = ::pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    if (w <= 0) std::abort();
    done += static_cast<size_t>(w);
  }
  std::optional<genesis::Tokenizer> loaded;
  try {
    loaded.emplace(genesis::Tokenizer::from_files(path));
  } catch (const genesis::Error&) {
    return 0;
  }
  const genesis::Tokenizer& tok = *loaded;
  // A loaded tokenizer must take any text: only encode's and decode's own refusals are allowed.
  const std::string texts[] = {"Hello, world! 你好 ünïcödé \xF0\x9F\x99\x82 <|im_end|> 123  \n\t x",
                               fuzz::bytes(data, size < 256 ? size : 256)};
  for (const std::string& text : texts) {
    try {
      const std::vector<int64_t> ids = tok.encode(text);
      (void)tok.decode(ids);
      (void)tok.decode(ids, true);
      genesis::StreamDecoder stream(tok);
      for (int64_t id : ids) (void)stream.put(id);
      (void)stream.flush();
    } catch (const genesis::Error&) {
    }
  }
  // Ids outside the vocabulary are refused, never read past the tables.
  for (int64_t bad : {tok.vocab_size(), int64_t{-7}, int64_t{99999999}}) {
    bool refused = false;
    try {
      (void)tok.decode({bad});
    } catch (const genesis::Error&) {
      refused = true;
    }
    if (!refused) std::abort();
  }
  return 0;
}

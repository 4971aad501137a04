// tests/llm/tokenizer/common.h - what the tokenizer tests share: fixture paths, the Qwen3
// tokenizer loaded once, the oracle file, the cases.txt reader and an independent UTF-8 checker.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "genesis/tokenizer.hpp"

namespace toktest {

using json = nlohmann::json;

inline const std::string kFixtures = std::string(GENESIS_SOURCE_DIR) + "/tests/fixtures/tokenizer";
inline const std::string kQwen3Dir = kFixtures + "/qwen3";

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline void write_file(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary);
  f << data;
}

/** Qwen3's tokenizer, loaded once for the whole binary. */
inline const genesis::Tokenizer& qwen3() {
  static const genesis::Tokenizer tok = genesis::Tokenizer::from_pretrained(kQwen3Dir);
  return tok;
}

/** One expected case written by gen_oracle.mjs. */
struct OracleCase {
  std::string input;  // raw bytes (may be invalid UTF-8)
  std::vector<int64_t> ids;
  std::string decoded, decoded_skip_special;
};

inline std::string from_hex(const std::string& h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2) out += char(std::stoi(h.substr(i, 2), nullptr, 16));
  return out;
}

inline const std::vector<OracleCase>& oracle() {
  static const std::vector<OracleCase> cases = [] {
    std::vector<OracleCase> v;
    const json doc = json::parse(read_file(kFixtures + "/qwen3_expected.json"));
    for (const json& c : doc.at("cases"))
      v.push_back({from_hex(c.at("input_hex")), c.at("ids").get<std::vector<int64_t>>(), c.at("decoded"),
                   c.at("decoded_skip_special")});
    return v;
  }();
  return cases;
}

/** Random id sequences with the oracle's decoded text (no input). */
inline const std::vector<OracleCase>& decode_oracle() {
  static const std::vector<OracleCase> cases = [] {
    std::vector<OracleCase> v;
    const json doc = json::parse(read_file(kFixtures + "/qwen3_expected.json"));
    for (const json& c : doc.at("decode_cases"))
      v.push_back({"", c.at("ids").get<std::vector<int64_t>>(), c.at("decoded"), c.at("decoded_skip_special")});
    return v;
  }();
  return cases;
}

/** Reads cases.txt with the escape rules documented at its top (same as gen_oracle.mjs). */
inline std::vector<std::string> read_cases(const std::string& path) {
  std::vector<std::string> cases;
  std::istringstream in(read_file(path));
  std::string line;
  auto put_cp = [](std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xC0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += char(0xE0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    } else {
      out += char(0xF0 | (cp >> 18));
      out += char(0x80 | ((cp >> 12) & 0x3F));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    }
  };
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::string out;
    for (size_t i = 0; i < line.size();) {
      if (line[i] != '\\') {
        out += line[i++];
        continue;
      }
      const char e = line[i + 1];
      if (e == 'n')
        out += '\n';
      else if (e == 'r')
        out += '\r';
      else if (e == 't')
        out += '\t';
      else if (e == '\\')
        out += '\\';
      if (e == 'n' || e == 'r' || e == 't' || e == '\\' || e == 'E') {
        i += 2;
      } else if (e == 'x') {
        out += char(std::stoi(line.substr(i + 2, 2), nullptr, 16));
        i += 4;
      } else if (e == 'u') {
        const size_t close = line.find('}', i);
        put_cp(out, uint32_t(std::stoul(line.substr(i + 3, close - i - 3), nullptr, 16)));
        i = close + 1;
      } else if (e == 'R') {
        const size_t c1 = line.find('}', i), c2 = line.find('}', c1 + 1);
        const int n = std::stoi(line.substr(i + 3, c1 - i - 3));
        const std::string text = line.substr(c1 + 2, c2 - c1 - 2);
        for (int k = 0; k < n; ++k) out += text;
        i = c2 + 1;
      } else {
        ADD_FAILURE() << "unknown escape in cases.txt: " << line;
        break;
      }
    }
    cases.push_back(out);
  }
  return cases;
}

/** Strict UTF-8 check written independently of the tokenizer (RFC 3629 table). */
inline bool valid_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char b = (unsigned char)s[i];
    size_t n;
    uint32_t cp;
    if (b < 0x80) {
      ++i;
      continue;
    }
    if ((b & 0xE0) == 0xC0) {
      n = 1;
      cp = b & 0x1F;
    } else if ((b & 0xF0) == 0xE0) {
      n = 2;
      cp = b & 0x0F;
    } else if ((b & 0xF8) == 0xF0) {
      n = 3;
      cp = b & 0x07;
    } else
      return false;
    for (size_t k = 1; k <= n; ++k) {
      if (i + k >= s.size()) return false;
      const unsigned char c = (unsigned char)s[i + k];
      if ((c & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (c & 0x3F);
    }
    const uint32_t min[] = {0, 0x80, 0x800, 0x10000};
    if (cp < min[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n + 1;
  }
  return true;
}

/** Printable rendering of bytes for failure messages. */
inline std::string show(const std::string& s) {
  std::string r;
  for (unsigned char c : s) {
    if (c == '\n')
      r += "\\n";
    else if (c == '\r')
      r += "\\r";
    else if (c == '\t')
      r += "\\t";
    else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      snprintf(buf, sizeof buf, "\\x%02X", c);
      r += buf;
    } else
      r += char(c);
  }
  return r.size() > 120 ? r.substr(0, 117) + "..." : r;
}

}  // namespace toktest

#include "common/log_text.h"

#include <algorithm>

#include "fmt/format.h"

namespace pkforge {

namespace {

// Length of the control character starting at s[i] (0 when none).
size_t ControlAt(std::string_view s, size_t i, uint32_t* code_point) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x20 || c == 0x7F) {
    *code_point = c;
    return 1;
  }
  auto byte = [&](size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0; };
  if (c == 0xC2 && byte(1) >= 0x80 && byte(1) <= 0x9F) {  // C1
    *code_point = byte(1);
    return 2;
  }
  if (c == 0xE2 && byte(1) == 0x80 && (byte(2) == 0xA8 || byte(2) == 0xA9)) {  // U+2028/9
    *code_point = 0x2000 + (byte(2) - 0x80);
    return 3;
  }
  return 0;
}

}  // namespace

std::optional<ControlCharacter> FirstControlCharacter(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    uint32_t cp = 0;
    if (ControlAt(s, i, &cp) > 0) return ControlCharacter{i, cp};
  }
  return std::nullopt;
}

std::string LogSafe(std::string_view s, size_t max_bytes) {
  std::string out;
  size_t n = std::min(s.size(), max_bytes);
  // Never cut a UTF-8 sequence in two.
  while (n > 0 && n < s.size() && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  for (size_t i = 0; i < n;) {
    uint32_t cp = 0;
    const size_t len = ControlAt(s, i, &cp);
    if (len == 0) {
      if (s[i] == '\\') out += '\\';
      out += s[i++];
      continue;
    }
    switch (cp) {
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default: out += cp < 0x100 ? fmt::format("\\x{:02x}", cp) : fmt::format("\\u{:04x}", cp);
    }
    i += len;
  }
  if (n < s.size()) out += fmt::format("...({} bytes)", s.size());
  return out;
}

}  // namespace pkforge

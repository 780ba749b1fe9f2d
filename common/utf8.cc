#include "common/utf8.h"

namespace pkforge {

size_t Utf8SequenceAt(std::string_view s, size_t i, uint32_t* cp) {
  if (i >= s.size()) return 0;
  const auto c = static_cast<unsigned char>(s[i]);
  size_t len = 0;
  uint32_t v = 0, min = 0;
  if (c < 0x80) {
    *cp = c;
    return 1;
  } else if (c >= 0xC2 && c <= 0xDF) {
    len = 2, v = c & 0x1F, min = 0x80;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3, v = c & 0x0F, min = 0x800;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4, v = c & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    const auto cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xC0) != 0x80) return 0;
    v = (v << 6) | (cc & 0x3F);
  }
  if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
  *cp = v;
  return len;
}

namespace {
// Calls good(code point, its bytes) for each well-formed sequence of `s` and
// bad() for each byte that starts none, in order.
template <class Good, class Bad>
void Decode(std::string_view s, Good good, Bad bad) {
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    const size_t n = Utf8SequenceAt(s, i, &cp);
    if (n == 0) {
      bad();
      ++i;
    } else {
      good(cp, s.substr(i, n));
      i += n;
    }
  }
}
}  // namespace

bool IsValidUtf8(std::string_view s) {
  bool ok = true;
  Decode(
      s, [](uint32_t, std::string_view) {}, [&] { ok = false; });
  return ok;
}

std::string ValidUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  Decode(
      s, [&](uint32_t, std::string_view seq) { out.append(seq); },
      [&] { out += kUtf8Replacement; });
  return out;
}

std::string TerminalSafe(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  auto escape = [&](const char* prefix, uint32_t cp) {
    out += prefix;
    out += kHex[cp >> 4];
    out += kHex[cp & 0xf];
  };
  Decode(
      s,
      [&](uint32_t cp, std::string_view seq) {
        if ((cp < 0x20 && cp != '\n' && cp != '\t') || cp == 0x7f)
          escape("\\x", cp);
        else if (cp >= 0x80 && cp <= 0x9f)
          escape("\\u00", cp);
        else
          out.append(seq);
      },
      [&] { out += kUtf8Replacement; });
  return out;
}

}  // namespace pkforge

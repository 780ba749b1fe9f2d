// Client text in the daemons' logs and error messages.
//
// Strings a client chooses (client_tag, ...) end up in log lines. A newline
// or other control character in them would let a client forge log lines
// (issue #15: a client_tag with "\n" wrote a line of its choosing into the
// executor's log) or rewrite the operator's terminal (escape sequences).
// client_tag is refused when it holds one (Pipeline::Validate, naming the
// field); every client string that is logged goes through LogSafe as well.
//
// Control characters: C0 (U+0000..U+001F), DEL (U+007F), C1 (U+0080..U+009F)
// and the Unicode line/paragraph separators U+2028/U+2029.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace pkforge {

struct ControlCharacter {
  size_t offset = 0;       // byte offset in the string
  uint32_t code_point = 0;
};

// The first control character of `s` (UTF-8), if any.
std::optional<ControlCharacter> FirstControlCharacter(std::string_view s);

// `s` with every control character written as \n, \r, \t, \\xNN or \\uNNNN
// (and a backslash as \\), cut to `max_bytes` of input with "..." appended:
// always one line.
std::string LogSafe(std::string_view s, size_t max_bytes = 256);

}  // namespace pkforge

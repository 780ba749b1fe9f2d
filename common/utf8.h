// UTF-8 decoding, once: every place that makes untrusted bytes (compiler
// output, candidate sources, LLM text, names in plots) safe for proto3
// strings, HTML, XML or JSON decides what to do with a bad byte, but which
// bytes are bad is decided here.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace pkforge {

// Length (1-4) of the well-formed UTF-8 sequence that starts at s[i], and its
// code point in *cp; 0 when the byte there starts none (a stray continuation
// byte, a truncated sequence, an overlong form, a surrogate, > U+10FFFF).
size_t Utf8SequenceAt(std::string_view s, size_t i, uint32_t* cp);

inline constexpr std::string_view kUtf8Replacement = "\xEF\xBF\xBD";  // U+FFFD

// Text for a terminal: every control character but newline and tab (C0,
// DEL, the C1 controls U+0080-U+009F, which some terminals also obey) is
// written as a visible escape ("\x1b", "\u009b"), and bytes that are not
// UTF-8 as U+FFFD. What a candidate printed (stderr tails, messages that
// quote it) reaches people through `pkforge eval` and the worker's text
// output; raw, an escape sequence could clear the screen and draw a
// made-up verdict (red team round 14 r14_ansi_forge).
std::string TerminalSafe(std::string_view s);

// `s` with every byte that starts no well-formed sequence replaced by
// U+FFFD, everything else kept: what may go into a proto3 string field
// (whose JSON printer rejects invalid UTF-8), e.g. a candidate's stderr.
std::string ValidUtf8(std::string_view s);

// Whether every byte of `s` is part of a well-formed sequence.
bool IsValidUtf8(std::string_view s);

}  // namespace pkforge

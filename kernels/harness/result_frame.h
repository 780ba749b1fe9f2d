// The judge's verdict on its way to the executor.
//
// The executor starts `pkforge-worker launch --result-key-stdin` and writes a
// fresh random key (hex) on its stdin, which the judge reads before any rank
// exists. The judge then prints exactly one frame on stdout and nothing else:
//
//   PKFORGE-RESULT/1 <json bytes> <hex HMAC-SHA256(key, json)>\n<json>\nPKFORGE-END\n
//
// ParseFramedResult() accepts exactly that: any byte before or after the
// frame, a length or MAC that does not match, a missing end marker or an
// output that was cut at the capture limit is an error, never a parsed
// partial. No candidate process can write the judge's stdout (it is
// non-dumpable and the ranks' stdout/stderr are their own memfds), and none
// knows the key, so a valid frame is the judge's.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace pkforge::kernels {

// A new random key (64 hex digits).
std::string NewResultKey();
std::string FrameResult(std::string_view json, std::string_view key);
// The JSON inside the one valid frame of `output`.
absl::StatusOr<std::string> ParseFramedResult(std::string_view output, std::string_view key,
                                              bool truncated);

}  // namespace pkforge::kernels

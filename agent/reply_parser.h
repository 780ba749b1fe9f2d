// Turns an LLM reply into a candidate source file.
//
// Accepted forms (the prompt defines them, see ReplyFormatInstructions):
// 1. SEARCH/REPLACE edit blocks, applied in order to `base` (the current best
//    or the node being refined):
//        <<<<<<< SEARCH
//        exact text of the current file
//        =======
//        replacement
//        >>>>>>> REPLACE
//    Markers may sit inside code fences. Each SEARCH text must occur exactly
//    once in the file as it stands when the block is applied (exact match,
//    line endings normalised to \n); the first block that does not apply
//    fails the whole reply, naming the block and why.
// 2. Otherwise a whole file in a fenced block tagged cuda, cu, cpp, c++, cxx,
//    cc or c (or untagged). With several blocks, the last one that defines
//    pkf_run wins (models often show a snippet before the final file).
// The result must define pkf_run and be at most kMaxCandidateBytes.
//
// Errors are INVALID_ARGUMENT with a message written for the LLM (it becomes
// the next prompt's feedback): no code, an unclosed fence (reply cut off),
// a malformed or non-applying edit block, a missing pkf_run, a file too large.
//
// Threading: pure function; safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace pkforge::agent {

inline constexpr size_t kMaxCandidateBytes = 1 << 20;  // the executor's request limit

struct ParsedReply {
  enum class Kind { kFullFile, kEdits };
  Kind kind = Kind::kFullFile;
  std::string source;
  int32_t edits_applied = 0;
};

absl::StatusOr<ParsedReply> ParseReply(std::string_view reply, std::string_view base);

// True when `source` defines (or at least names as a call) pkf_run( ... ).
bool MentionsPkfRun(std::string_view source);

}  // namespace pkforge::agent

// Compile flag allowlist: which user-supplied extra_flags a candidate's
// compile may carry (docs/design.md sections 5-7; issue 5). Split out of
// compiler.cc (issue 20); Compiler::ValidateFlags and
// Compiler::AllowedFlagsSummary are thin wrappers over these.
//
// Contract
//   A flag is allowed only if it matches the allowlist for its backend:
//   optimisation, macros, warnings, ISA and codegen options, and for cuda the
//   nvcc options whose values are checked (-Xptxas/-Xcompiler lists are
//   checked element by element). Never anything that names files, plug-ins,
//   wrappers, the linker/assembler/preprocessor, or the architecture beyond
//   the device's own arch with an a/f suffix. No shell is ever involved, so a
//   flag can change only the candidate's own compile. Errors are
//   INVALID_ARGUMENT naming the field (backend, extra_flags, extra_flags[i]).
//
// Thread safety
//   Pure functions over their arguments (the tables are immutable statics):
//   callable from any thread at once.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "pkforge/v1/common.pb.h"

namespace pkforge::executor {

// OK when every flag is allowed for `backend` on a device of `cuda_arch`
// (e.g. "sm_90"); otherwise INVALID_ARGUMENT naming the index and the flag
// and listing what is allowed.
absl::Status ValidateCompileFlags(v1::Backend backend, const std::vector<std::string>& flags,
                                  const std::string& cuda_arch);

// The allowlist in words (for error messages and agents' prompts).
std::string AllowedCompileFlagsSummary(v1::Backend backend);

// -O<anything>: a user optimisation level that replaces the default -O3.
bool IsOptLevelFlag(std::string_view f);

// "sm_" followed by lower-case letters and digits (sm_90, sm_100).
bool IsCudaArchName(std::string_view arch);

// At most 120 characters of `s` with non-printable bytes as \xNN, for error
// messages that quote untrusted input.
std::string PrintableForMessage(std::string_view s);

}  // namespace pkforge::executor

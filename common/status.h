// pkforge status conventions.
//
// Contract: every fallible function across a module boundary returns
// absl::Status or absl::StatusOr<T>; no exceptions cross module boundaries.
// RETURN_IF_ERROR / ASSIGN_OR_RETURN propagate errors; Annotate() prefixes
// context ("opening db /x: ...") so a failure deep down is still readable at
// the top. The one conversion to grpc::Status lives in common/grpc_status.h.
//
// Thread safety: everything here is stateless and safe from any thread.
#pragma once

#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace pkforge {

// Debian's abseil is built with its own absl::string_view (not an alias of
// std::string_view), so absl::StrCat and the Status constructors do not accept
// std::string_view. Project code uses std::string_view in its own APIs and
// bridges with AsAbsl(), or formats messages with fmt::format.
inline absl::string_view AsAbsl(std::string_view s) { return {s.data(), s.size()}; }
inline std::string_view AsStd(absl::string_view s) { return {s.data(), s.size()}; }

// Returns `s` with `context` prepended to its message ("context: message"),
// keeping the code. OK stays OK.
absl::Status Annotate(const absl::Status& s, std::string_view context);

// INVALID_ARGUMENT "field: why": the one shape of a request field's
// validation error (orchestrator requests, job specs, evaluation options).
absl::Status InvalidField(std::string_view field, std::string_view why);

// Errno-based error with the strerror text, e.g. ErrnoError("open /x", ENOENT)
// -> NOT_FOUND "open /x: No such file or directory".
absl::Status ErrnoError(std::string_view what, int err);

}  // namespace pkforge

#define PKF_STATUS_CONCAT_INNER_(a, b) a##b
#define PKF_STATUS_CONCAT_(a, b) PKF_STATUS_CONCAT_INNER_(a, b)

#ifndef RETURN_IF_ERROR
#define RETURN_IF_ERROR(expr)                  \
  do {                                         \
    ::absl::Status pkf_status_ = (expr);       \
    if (!pkf_status_.ok()) return pkf_status_; \
  } while (0)
#endif

#ifndef ASSIGN_OR_RETURN
#define PKF_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return std::move(tmp).status();   \
  lhs = std::move(tmp).value()
#define ASSIGN_OR_RETURN(lhs, expr) \
  PKF_ASSIGN_OR_RETURN_IMPL_(PKF_STATUS_CONCAT_(pkf_statusor_, __LINE__), lhs, expr)
#endif

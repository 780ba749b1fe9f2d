// Identifiers for jobs, evaluations, turns, LLM calls.
//
// Format: "<prefix>_<26 chars>" where the 26 characters are a ULID (Crockford
// base32 of 48 bits of Unix milliseconds then 80 random bits from getrandom):
// ids sort by creation time as plain strings, which keeps SQLite indexes and
// `pkforge jobs` listings in order, and they are unguessable enough that a
// client cannot enumerate other users' jobs by counting.
//
// Thread safety: NewId may be called from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace pkforge {

std::string NewId(std::string_view prefix, int64_t wall_us);
std::string NewId(std::string_view prefix);  // uses the system clock

// OK when `id` has the form NewId(prefix) produces; otherwise INVALID_ARGUMENT
// naming what is wrong. Used to validate ids arriving over gRPC.
absl::Status ValidateId(std::string_view id, std::string_view prefix);

}  // namespace pkforge

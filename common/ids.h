// Identifiers for jobs, evaluations, turns, LLM calls.
//
// Format: "<prefix>_<26 chars>" where the 26 characters are a ULID (Crockford
// base32 of 48 bits of Unix milliseconds then 80 random bits from getrandom):
// ids sort by creation time as plain strings, which keeps SQLite indexes and
// `pkforge jobs` listings in order, and they are unguessable enough that a
// client cannot enumerate other users' jobs by counting.
//
// Within one process NewId(prefix) ids are strictly increasing in call order:
// an id made in the same millisecond as the previous one (or after the system
// clock stepped back) continues from it by a random step of 1..2^32
// (monotonic ULIDs), so "ORDER BY id" is creation order even for jobs created
// in one millisecond. NewId(prefix, wall_us) keeps a separate sequence: ids at
// the same explicit millisecond as the previous explicit one continue from it,
// any other time starts afresh, and explicit times never move the system-clock
// sequence. Across processes, order is by millisecond only.
//
// Thread safety: NewId may be called from any thread (a mutex per sequence).
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

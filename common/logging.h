// Process-wide logging set-up on spdlog.
//
// Every binary calls InitLogging() once at start with its config; library code
// then logs through spdlog's default logger (spdlog::info(...)). Two formats:
//   text: "2026-12-02T13:14:24.123456Z I executor] message"  (humans)
//   json: one object per line {"ts":..,"level":..,"logger":..,"msg":..} with the
//         message JSON-escaped (log shippers).
// Secrets (bearer tokens, API keys) registered with RegisterSecret() are
// replaced by "***" in every formatted message, a second line of defence
// behind never logging them in the first place.
//
// Thread safety: InitLogging and RegisterSecret may be called from any thread
// but are meant for start-up; logging itself is thread-safe (spdlog mt sinks).
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace pkforge {

struct LoggingOptions {
  std::string level = "info";    // trace|debug|info|warn|error|critical|off
  std::string format = "text";   // text|json
  std::string file;              // empty: stderr; otherwise appended to this file
  std::string name = "pkforge";  // logger name (the binary), shown in each line
};

absl::Status InitLogging(const LoggingOptions& options);

// Redact `secret` (if at least 4 characters) from all future log messages.
void RegisterSecret(std::string_view secret);

// Returns `text` with every registered secret replaced by "***".
std::string RedactSecrets(std::string_view text);

// JSON string escaping (quotes not included), shared with the json formatter.
std::string JsonEscape(std::string_view text);

}  // namespace pkforge

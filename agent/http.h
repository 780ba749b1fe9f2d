// A small HTTP POST client over libcurl for the LLM providers.
//
// Contract
// - One call = one attempt (no retries here: the LLM client owns the retry
//   policy because it depends on the provider's answer). HTTP error statuses
//   are responses, not errors.
// - TLS peer and host verification are always on (ca_bundle may point at an
//   extra CA file, e.g. for a corporate proxy; nothing can turn checks off).
//   Only http and https are allowed and redirects are not followed, so an API
//   key in a header is never sent to a host other than the configured one.
// - Errors (no response at all): UNAVAILABLE for transport failures that may
//   pass (connection refused or reset, nothing received, truncated body), with
//   `retryable` semantics left to the caller; DEADLINE_EXCEEDED when the
//   attempt's timeout passed; the token's status when `cancel` fired (the
//   transfer is aborted within ~100 ms: a curl_multi_poll loop woken by the
//   token and a progress callback both check it); FAILED_PRECONDITION for TLS
//   verification failures; INVALID_ARGUMENT for a malformed URL. Messages name
//   the URL and curl's error, never request headers.
// - The attempt's total timeout is min(timeout_s, the token's remaining time).
//
// Threading: HttpPost may be called from any number of threads at once; each
// call uses its own curl handles. curl_global_init runs once, thread-safely.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/cancel.h"

namespace pkforge::agent {

struct HttpRequest {
  std::string url;
  std::vector<std::string> headers;  // "Name: value"; may carry secrets, never logged
  std::string body;
  double connect_timeout_s = 10;
  double timeout_s = 300;  // whole attempt
  std::string ca_bundle;   // extra CA file; "" = system store
  int64_t max_response_bytes = 32 << 20;
  std::string user_agent = "pkforge";
};

struct HttpResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names, last value wins
  std::string body;
  double elapsed_ms = 0;
};

absl::StatusOr<HttpResponse> HttpPost(const HttpRequest& request, const CancelToken& cancel);

// Parses a Retry-After value (delta seconds, possibly fractional, or an HTTP
// date relative to `now_wall_s`) into milliseconds; -1 when unparseable.
int64_t ParseRetryAfterMs(const std::string& value, int64_t now_wall_s);

}  // namespace pkforge::agent

// LLM clients behind one interface: `openai` (POST {base_url}/chat/completions,
// any OpenAI-compatible server: OpenAI, Together, vLLM, SGLang, llama.cpp) and
// `anthropic` (POST {base_url}/v1/messages with the anthropic-version header
// and content blocks), over libcurl (agent/http.h).
//
// Contract
// - Complete() makes one logical call: up to RetryPolicy::max_attempts HTTP
//   attempts. It retries with exponential backoff and jitter on 408/409/429
//   (waiting at least the Retry-After the server asked for), any 5xx (incl.
//   Anthropic's 529 "overloaded"), connection failures and resets, attempt
//   timeouts, truncated bodies and malformed or incomplete JSON bodies. It
//   never retries past the token's deadline (the job's remaining budget): when
//   the next wait would end after it, it gives up with the last error. Other
//   4xx (bad request, auth, unknown model) fail at once: retrying cannot help.
// - Every LlmResult carries the attempts made, the latency of the whole call
//   (retries and backoff included), token usage as the provider reported it
//   and the cost from the PriceTable (an unknown model costs 0 and says so in
//   `note`), also when the call failed.
// - The API key is LlmClientOptions.api_key when set (a client's own key,
//   which the orchestrator allows per provider; redacted by this client
//   only, never registered process-wide), else read from the environment
//   variable named in LlmConfig.api_key_env at every call (so a rotated key
//   is picked up) and registered with RegisterSecret() (log redaction). The
//   caller (the orchestrator) decides which variable and base_url: they come
//   from an operator-configured provider, never from an API client. The key
//   is sent only in the provider's auth header to the configured base_url.
//   It never appears in results, errors or logs: every text that came back
//   from the provider passes through RedactSecrets(). An empty api_key_env
//   means no key (local servers); a named but unset variable is
//   FAILED_PRECONDITION (the message does not name the variable).
// - Error codes of LlmResult::status: the token's status when cancelled or out
//   of budget; UNAVAILABLE / DEADLINE_EXCEEDED / RESOURCE_EXHAUSTED (429) after
//   retries ran out; UNAUTHENTICATED (401), PERMISSION_DENIED (403),
//   NOT_FOUND (404), INVALID_ARGUMENT (other 4xx), FAILED_PRECONDITION
//   (missing key, TLS verification) are permanent -- see IsPermanentLlmError.
//
// Threading: a client is immutable after construction; Complete() may be
// called concurrently from any number of threads (best_of_n issues several
// calls at once). The sleep seam must be thread-safe too.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/cancel.h"
#include "common/clock.h"
#include "pkforge/v1/orchestrator.pb.h"

namespace pkforge::agent {

struct ChatMessage {
  std::string role;  // "system" | "user" | "assistant"
  std::string content;
};

// The messages as a JSON array [{"role":..,"content":..}] -- what is recorded
// as an LLM call's prompt (never the HTTP request, which carries the key).
std::string MessagesToJson(const std::vector<ChatMessage>& messages);

struct LlmRequest {
  std::vector<ChatMessage> messages;
  double temperature = 0.7;
  int32_t max_tokens = 8192;  // reply cap
};

struct LlmResult {
  absl::Status status;        // OK or the final error (redacted)
  std::string text;           // reply content (redacted)
  std::string finish_reason;  // "stop", "length", "end_turn", "max_tokens", ...
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  double latency_ms = 0;
  double cost_usd = 0;
  int32_t attempts = 0;
  std::string note;
};

// True for errors that retrying the same request later cannot fix (bad key,
// unknown model, malformed request, TLS verification, missing key variable).
bool IsPermanentLlmError(const absl::Status& status);

// USD per million tokens. Defaults are public list prices at the time of
// writing (approximate; the orchestrator config overrides or extends them).
struct PriceTable {
  struct Price {
    double input_per_mtok = 0;
    double output_per_mtok = 0;
  };
  std::map<std::string, Price> prices = Defaults();

  static std::map<std::string, Price> Defaults();
  // Exact model name first, then the longest table key that is a prefix of
  // `model` (so "claude-sonnet-4-20250514" uses "claude-sonnet-4").
  std::optional<Price> Lookup(std::string_view model) const;
};

struct RetryPolicy {
  int32_t max_attempts = 6;
  double initial_backoff_ms = 1000;
  double multiplier = 2.0;
  double max_backoff_ms = 60'000;
  // The wait is drawn uniformly from [(1 - jitter) * b, b] for backoff b
  // ("equal jitter"), so concurrent jobs hitting one rate limit spread out.
  double jitter = 0.5;
  // A Retry-After longer than this is treated as "give up now".
  double max_retry_after_ms = 300'000;
};

struct LlmClientOptions {
  RetryPolicy retry;
  PriceTable prices;
  double connect_timeout_s = 10;
  double default_request_timeout_s = 300;  // when LlmConfig.request_timeout_s is 0
  int32_t default_max_tokens = 8192;       // when the request's max_tokens is 0
  std::string anthropic_version = "2023-06-01";
  std::string ca_bundle;     // extra CA file for TLS, "" = system store
  // A literal key that replaces LlmConfig.api_key_env (see the contract).
  std::string api_key;
  uint64_t jitter_seed = 0;  // 0: seeded from std::random_device
  const Clock* clock = SystemClock::Get();
  // Test seam: waits between attempts; must return early when `cancel` fires.
  // Default: cancel.SleepFor(micros).
  std::function<absl::Status(int64_t micros, const CancelToken& cancel)> sleep;
};

class LlmClient {
 public:
  virtual ~LlmClient() = default;
  virtual LlmResult Complete(const LlmRequest& request, const CancelToken& cancel) const = 0;
  virtual std::string_view provider() const = 0;  // "openai" | "anthropic"
  virtual const std::string& model() const = 0;
};

// Validates `config` (provider, model, base_url scheme) and returns a client.
// base_url defaults: openai https://api.openai.com/v1, anthropic
// https://api.anthropic.com. The key is not read here (see Complete()).
absl::StatusOr<std::unique_ptr<LlmClient>> MakeLlmClient(const v1::LlmConfig& config,
                                                         LlmClientOptions options);

std::string_view ProviderName(v1::Provider provider);  // "openai", "anthropic", "unspecified"

// Provider wire formats, exposed for tests.
namespace wire {
struct ParsedReply {
  std::string text;
  std::string finish_reason;
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
};
std::string OpenAiBody(const std::string& model, const LlmRequest& request);
std::string AnthropicBody(const std::string& model, const LlmRequest& request);
// INVALID_ARGUMENT ("malformed reply: ...") when the body is not the expected JSON.
absl::StatusOr<ParsedReply> ParseOpenAiReply(std::string_view body);
absl::StatusOr<ParsedReply> ParseAnthropicReply(std::string_view body);
// The provider's error message from an error body, "" when none is found.
std::string ErrorMessage(std::string_view body);
}  // namespace wire

}  // namespace pkforge::agent

#include "agent/llm_client.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <random>
#include <utility>

#include "agent/http.h"
#include "common/logging.h"
#include "common/status.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"

namespace pkforge::agent {
namespace {

using nlohmann::json;

constexpr size_t kMaxErrorText = 600;

std::string Clip(std::string s, size_t n) {
  if (s.size() > n) {
    s.resize(n);
    s += "...";
  }
  return s;
}

// OpenAI's reasoning models reject max_tokens and a non-default temperature.
bool IsOpenAiReasoningModel(std::string_view model) {
  for (std::string_view p : {"o1", "o3", "o4", "gpt-5"}) {
    if (model.substr(0, p.size()) == p) return true;
  }
  return false;
}

absl::Status StatusFromHttp(int code, const std::string& what) {
  const absl::string_view m = AsAbsl(what);
  if (code == 400 || code == 413 || code == 422) return absl::InvalidArgumentError(m);
  if (code == 401) return absl::UnauthenticatedError(m);
  if (code == 403) return absl::PermissionDeniedError(m);
  if (code == 404) return absl::NotFoundError(m);
  if (code == 408) return absl::DeadlineExceededError(m);
  if (code == 409) return absl::AbortedError(m);
  if (code == 429) return absl::ResourceExhaustedError(m);
  if (code >= 500) return absl::UnavailableError(m);
  return absl::UnknownError(m);
}

bool RetryableHttp(int code) { return code == 408 || code == 409 || code == 429 || code >= 500; }

class HttpLlmClient final : public LlmClient {
 public:
  HttpLlmClient(v1::LlmConfig config, LlmClientOptions options, std::string url)
      : config_(std::move(config)), options_(std::move(options)), url_(std::move(url)) {
    uint64_t seed = options_.jitter_seed;
    if (seed == 0)
      seed = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
    rng_.seed(seed);
  }

  std::string_view provider() const override { return ProviderName(config_.provider()); }
  const std::string& model() const override { return config_.model(); }

  LlmResult Complete(const LlmRequest& request, const CancelToken& cancel) const override {
    const auto start = std::chrono::steady_clock::now();
    LlmResult r = CompleteImpl(request, cancel);
    r.latency_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    r.text = Redact(r.text);
    r.note = Redact(r.note);  // may quote a provider error
    r.finish_reason = Redact(r.finish_reason);
    if (!r.status.ok()) {
      r.status = absl::Status(r.status.code(), AsAbsl(Redact(AsStd(r.status.message()))));
    }
    return r;
  }

 private:
  LlmResult CompleteImpl(const LlmRequest& request, const CancelToken& cancel) const {
    LlmResult r;
    std::vector<std::string> headers = {"Content-Type: application/json"};
    const char* key = nullptr;
    if (!options_.api_key.empty()) {
      key = options_.api_key.c_str();
    } else if (!config_.api_key_env().empty()) {
      key = std::getenv(config_.api_key_env().c_str());
      if (key == nullptr || key[0] == '\0') {
        // Not naming the variable: the message may reach an API client.
        r.status = absl::FailedPreconditionError(
            "the provider's API key is not set in the orchestrator's environment");
        return r;
      }
      RegisterSecret(key);
    }
    if (key != nullptr) {
      if (config_.provider() == v1::PROVIDER_ANTHROPIC) {
        headers.push_back(std::string("x-api-key: ") + key);
      } else {
        headers.push_back(std::string("Authorization: Bearer ") + key);
      }
    }
    if (config_.provider() == v1::PROVIDER_ANTHROPIC) {
      headers.push_back("anthropic-version: " + options_.anthropic_version);
    }

    LlmRequest req = request;
    if (req.max_tokens <= 0) req.max_tokens = options_.default_max_tokens;
    HttpRequest http;
    http.url = url_;
    http.headers = std::move(headers);
    http.body = config_.provider() == v1::PROVIDER_ANTHROPIC ? wire::AnthropicBody(model(), req)
                                                             : wire::OpenAiBody(model(), req);
    http.connect_timeout_s = options_.connect_timeout_s;
    http.timeout_s = config_.request_timeout_s() > 0 ? config_.request_timeout_s()
                                                     : options_.default_request_timeout_s;
    http.ca_bundle = options_.ca_bundle;
    http.user_agent = "pkforge-agent";

    const int max_attempts = std::max(1, options_.retry.max_attempts);
    absl::Status last;
    for (int attempt = 1; attempt <= max_attempts; ++attempt) {
      r.attempts = attempt;
      bool retryable = false;
      int64_t retry_after_ms = -1;
      auto resp = HttpPost(http, cancel);
      if (!resp.ok()) {
        if (!cancel.status().ok()) {
          r.status = cancel.status();
          return r;
        }
        last = resp.status();
        retryable = last.code() == absl::StatusCode::kUnavailable ||
                    last.code() == absl::StatusCode::kDeadlineExceeded;
      } else if (resp->status >= 200 && resp->status < 300) {
        auto parsed = config_.provider() == v1::PROVIDER_ANTHROPIC
                          ? wire::ParseAnthropicReply(resp->body)
                          : wire::ParseOpenAiReply(resp->body);
        if (parsed.ok()) {
          r.status = absl::OkStatus();
          r.text = std::move(parsed->text);
          r.finish_reason = std::move(parsed->finish_reason);
          r.prompt_tokens = parsed->prompt_tokens;
          r.completion_tokens = parsed->completion_tokens;
          auto price = options_.prices.Lookup(model());
          if (price) {
            r.cost_usd = (static_cast<double>(r.prompt_tokens) * price->input_per_mtok +
                          static_cast<double>(r.completion_tokens) * price->output_per_mtok) /
                         1e6;
          } else {
            r.note = fmt::format("no price for model {}: cost recorded as 0", model());
          }
          if (attempt > 1) {
            if (!r.note.empty()) r.note += "; ";
            r.note += fmt::format("succeeded after {} attempts ({})", attempt,
                                  Clip(std::string(last.message()), 200));
          }
          return r;
        }
        // A 200 whose body is cut or not what the protocol says: proxies and
        // overloaded servers do this; the next attempt usually works.
        last = absl::UnavailableError(
            AsAbsl(fmt::format("HTTP {}: {}", resp->status, AsStd(parsed.status().message()))));
        retryable = true;
      } else {
        std::string msg = wire::ErrorMessage(resp->body);
        if (msg.empty()) msg = Clip(resp->body, 200);
        last = StatusFromHttp(resp->status,
                              fmt::format("HTTP {}: {}", resp->status, Clip(msg, kMaxErrorText)));
        retryable = RetryableHttp(resp->status);
        auto it = resp->headers.find("retry-after");
        if (it != resp->headers.end()) {
          retry_after_ms =
              ParseRetryAfterMs(it->second, options_.clock->NowWallMicros() / 1'000'000);
        }
      }
      const std::string where = fmt::format("{} {} at {}", provider(), model(), url_);
      if (!retryable || attempt == max_attempts) {
        r.status =
            Annotate(last, fmt::format("{} (attempt {} of {})", where, attempt, max_attempts));
        return r;
      }
      double delay_ms = NextBackoffMs(attempt);
      if (retry_after_ms >= 0) {
        if (static_cast<double>(retry_after_ms) > options_.retry.max_retry_after_ms) {
          r.status = Annotate(last, fmt::format("{}: server asked to retry after {} ms, giving up",
                                                where, retry_after_ms));
          return r;
        }
        delay_ms = std::max(delay_ms, static_cast<double>(retry_after_ms));
      }
      const int64_t remaining = cancel.RemainingMicros();
      if (remaining != CancelToken::kNoDeadline &&
          delay_ms * 1000.0 >= static_cast<double>(remaining)) {
        r.status = Annotate(
            last,
            fmt::format("{}: no budget left to retry (next attempt in {:.0f} ms, {:.0f} ms left)",
                        where, delay_ms, static_cast<double>(remaining) / 1000.0));
        return r;
      }
      const int64_t delay_us = static_cast<int64_t>(delay_ms * 1000.0);
      absl::Status slept =
          options_.sleep ? options_.sleep(delay_us, cancel) : cancel.SleepFor(delay_us);
      if (!slept.ok()) {
        r.status = slept;
        return r;
      }
    }
    r.status = last;  // not reached: the loop returns on the last attempt
    return r;
  }

  // Process-wide secrets plus this client's own key (a client key is not
  // registered process-wide: one per job would grow the list forever).
  std::string Redact(std::string_view text) const {
    std::string out = RedactSecrets(text);
    if (options_.api_key.size() >= 4) {
      for (size_t at = out.find(options_.api_key); at != std::string::npos;
           at = out.find(options_.api_key, at + 3)) {
        out.replace(at, options_.api_key.size(), "***");
      }
    }
    return out;
  }

  double NextBackoffMs(int attempt) const {
    const RetryPolicy& p = options_.retry;
    const double b =
        std::min(p.max_backoff_ms, p.initial_backoff_ms * std::pow(p.multiplier, attempt - 1));
    std::lock_guard<std::mutex> lock(rng_mu_);
    std::uniform_real_distribution<double> u(1.0 - std::clamp(p.jitter, 0.0, 1.0), 1.0);
    return b * u(rng_);
  }

  v1::LlmConfig config_;
  LlmClientOptions options_;
  std::string url_;
  mutable std::mutex rng_mu_;
  mutable std::mt19937_64 rng_;
};

}  // namespace

std::string MessagesToJson(const std::vector<ChatMessage>& messages) {
  json arr = json::array();
  for (const auto& m : messages) arr.push_back({{"role", m.role}, {"content", m.content}});
  return arr.dump(-1, ' ', false, json::error_handler_t::replace);
}

bool IsPermanentLlmError(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kUnauthenticated:
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
      return true;
    default:
      return false;
  }
}

std::map<std::string, PriceTable::Price> PriceTable::Defaults() {
  return {
      {"gpt-4o", {2.5, 10}},
      {"gpt-4o-mini", {0.15, 0.6}},
      {"gpt-4.1", {2, 8}},
      {"gpt-4.1-mini", {0.4, 1.6}},
      {"gpt-4.1-nano", {0.1, 0.4}},
      {"o1", {15, 60}},
      {"o3", {2, 8}},
      {"o3-mini", {1.1, 4.4}},
      {"o4-mini", {1.1, 4.4}},
      {"gpt-5", {1.25, 10}},
      {"gpt-5-mini", {0.25, 2}},
      {"gpt-5-nano", {0.05, 0.4}},
      {"claude-opus-4", {15, 75}},
      {"claude-sonnet-4", {3, 15}},
      {"claude-3-7-sonnet", {3, 15}},
      {"claude-3-5-sonnet", {3, 15}},
      {"claude-3-5-haiku", {0.8, 4}},
      {"claude-haiku-4-5", {1, 5}},
  };
}

std::optional<PriceTable::Price> PriceTable::Lookup(std::string_view model) const {
  auto it = prices.find(std::string(model));
  if (it != prices.end()) return it->second;
  std::optional<Price> best;
  size_t best_len = 0;
  for (const auto& [key, price] : prices) {
    if (key.size() > best_len && model.substr(0, key.size()) == key) {
      best = price;
      best_len = key.size();
    }
  }
  return best;
}

std::string_view ProviderName(v1::Provider provider) {
  switch (provider) {
    case v1::PROVIDER_OPENAI:
      return "openai";
    case v1::PROVIDER_ANTHROPIC:
      return "anthropic";
    default:
      return "unspecified";
  }
}

absl::StatusOr<std::unique_ptr<LlmClient>> MakeLlmClient(const v1::LlmConfig& config,
                                                         LlmClientOptions options) {
  if (config.provider() != v1::PROVIDER_OPENAI && config.provider() != v1::PROVIDER_ANTHROPIC) {
    return absl::InvalidArgumentError("llm.provider: expected openai or anthropic");
  }
  if (config.model().empty()) return absl::InvalidArgumentError("llm.model is empty");
  if (config.temperature() < 0 || !std::isfinite(config.temperature())) {
    return absl::InvalidArgumentError("llm.temperature must be >= 0");
  }
  std::string base = config.base_url();
  if (base.empty()) {
    base = config.provider() == v1::PROVIDER_ANTHROPIC ? "https://api.anthropic.com"
                                                       : "https://api.openai.com/v1";
  }
  if (base.rfind("https://", 0) != 0 && base.rfind("http://", 0) != 0) {
    return absl::InvalidArgumentError(
        AsAbsl(fmt::format("llm.base_url {}: expected http:// or https://", RedactSecrets(base))));
  }
  while (!base.empty() && base.back() == '/') base.pop_back();
  std::string url;
  if (config.provider() == v1::PROVIDER_OPENAI) {
    url = base + "/chat/completions";
  } else {
    // Accept both "https://api.anthropic.com" and ".../v1" as the base.
    const bool has_v1 = base.size() >= 3 && base.compare(base.size() - 3, 3, "/v1") == 0;
    url = base + (has_v1 ? "/messages" : "/v1/messages");
  }
  return std::unique_ptr<LlmClient>(new HttpLlmClient(config, std::move(options), std::move(url)));
}

namespace wire {

std::string OpenAiBody(const std::string& model, const LlmRequest& request) {
  json msgs = json::array();
  for (const auto& m : request.messages) msgs.push_back({{"role", m.role}, {"content", m.content}});
  json body = {{"model", model}, {"messages", std::move(msgs)}};
  if (IsOpenAiReasoningModel(model)) {
    body["max_completion_tokens"] = request.max_tokens;
  } else {
    body["max_tokens"] = request.max_tokens;
    body["temperature"] = request.temperature;
  }
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string AnthropicBody(const std::string& model, const LlmRequest& request) {
  std::string system;
  json msgs = json::array();
  for (const auto& m : request.messages) {
    if (m.role == "system") {
      if (!system.empty()) system += "\n\n";
      system += m.content;
      continue;
    }
    msgs.push_back(
        {{"role", m.role}, {"content", json::array({{{"type", "text"}, {"text", m.content}}})}});
  }
  json body = {{"model", model},
               {"max_tokens", request.max_tokens},
               {"temperature", std::min(request.temperature, 1.0)},  // Anthropic's range is 0..1
               {"messages", std::move(msgs)}};
  if (!system.empty()) body["system"] = system;
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

namespace {

int64_t IntOr0(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number()) return 0;
  return it->get<int64_t>();
}

absl::Status Malformed(std::string_view why) {
  return absl::InvalidArgumentError(AsAbsl(fmt::format("malformed reply: {}", why)));
}

}  // namespace

absl::StatusOr<ParsedReply> ParseOpenAiReply(std::string_view body) {
  try {
    json j = json::parse(body);
    if (!j.is_object()) return Malformed("not a JSON object");
    auto choices = j.find("choices");
    if (choices == j.end() || !choices->is_array() || choices->empty()) {
      return Malformed("no choices");
    }
    const json& c0 = (*choices)[0];
    auto msg = c0.find("message");
    if (msg == c0.end() || !msg->is_object()) return Malformed("choices[0] has no message");
    ParsedReply out;
    auto content = msg->find("content");
    if (content != msg->end()) {
      if (content->is_string()) {
        out.text = content->get<std::string>();
      } else if (content->is_array()) {  // content parts, as some servers send
        for (const auto& part : *content) {
          if (part.is_object() && part.value("type", "") == "text")
            out.text += part.value("text", "");
        }
      } else if (!content->is_null()) {
        return Malformed("message.content is neither a string nor parts");
      }
    }
    auto fr = c0.find("finish_reason");
    if (fr != c0.end() && fr->is_string()) out.finish_reason = fr->get<std::string>();
    auto usage = j.find("usage");
    if (usage != j.end() && usage->is_object()) {
      out.prompt_tokens = IntOr0(*usage, "prompt_tokens");
      out.completion_tokens = IntOr0(*usage, "completion_tokens");
    }
    return out;
  } catch (const json::exception& e) {
    return Malformed(e.what());
  }
}

absl::StatusOr<ParsedReply> ParseAnthropicReply(std::string_view body) {
  try {
    json j = json::parse(body);
    if (!j.is_object()) return Malformed("not a JSON object");
    if (j.value("type", "") == "error") return Malformed("error object in a 2xx reply");
    auto content = j.find("content");
    if (content == j.end() || !content->is_array()) return Malformed("no content blocks");
    ParsedReply out;
    for (const auto& block : *content) {
      if (block.is_object() && block.value("type", "") == "text")
        out.text += block.value("text", "");
    }
    auto sr = j.find("stop_reason");
    if (sr != j.end() && sr->is_string()) out.finish_reason = sr->get<std::string>();
    auto usage = j.find("usage");
    if (usage != j.end() && usage->is_object()) {
      // Cached prompt tokens are billed differently but are prompt tokens.
      out.prompt_tokens = IntOr0(*usage, "input_tokens") +
                          IntOr0(*usage, "cache_creation_input_tokens") +
                          IntOr0(*usage, "cache_read_input_tokens");
      out.completion_tokens = IntOr0(*usage, "output_tokens");
    }
    return out;
  } catch (const json::exception& e) {
    return Malformed(e.what());
  }
}

std::string ErrorMessage(std::string_view body) {
  try {
    json j = json::parse(body);
    if (!j.is_object()) return "";
    auto err = j.find("error");
    if (err == j.end()) return j.value("message", "");
    if (err->is_string()) return err->get<std::string>();
    if (err->is_object()) {
      std::string type = err->value("type", "");
      std::string msg = err->value("message", "");
      return type.empty() ? msg : type + ": " + msg;
    }
  } catch (const json::exception&) {
  }
  return "";
}

}  // namespace wire
}  // namespace pkforge::agent

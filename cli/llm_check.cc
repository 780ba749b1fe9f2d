// `pkforge llm check`: one short call to an LLM provider, for users setting up
// (is the endpoint reachable, is the key accepted, does the model exist, how
// slow is it). Uses the agent's own client, so what works here works in jobs.
// The key is read from the environment variable named by --api-key-env and is
// never printed (errors that echo it are redacted).
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "agent/cancel.h"
#include "agent/llm_client.h"
#include "cli/commands.h"
#include "cli/output.h"
#include "common/status.h"
#include "nlohmann/json.hpp"

namespace pkforge::cli {
namespace {

struct LlmCheckOptions {
  std::string provider;
  std::string base_url;
  std::string model;
  std::string api_key_env;
  double timeout_s = 30;
  int max_tokens = 16;
  int retries = 0;
  std::string output = "table";
};

int RunLlmCheck(const LlmCheckOptions& o) {
  v1::LlmConfig config;
  config.set_provider(o.provider == "anthropic" ? v1::PROVIDER_ANTHROPIC : v1::PROVIDER_OPENAI);
  config.set_model(o.model);
  config.set_base_url(o.base_url);
  config.set_api_key_env(o.api_key_env);
  config.set_request_timeout_s(o.timeout_s);
  // The user here is the operator: name the variable (the client's own
  // error does not, since in jobs it can reach an API client).
  if (!o.api_key_env.empty()) {
    const char* key = std::getenv(o.api_key_env.c_str());
    if (key == nullptr || key[0] == '\0') {
      return ReportStatus("llm check", absl::FailedPreconditionError(absl::StrCat(
                                           "environment variable ", o.api_key_env,
                                           " (--api-key-env) is not set")));
    }
  }
  agent::LlmClientOptions options;
  options.retry.max_attempts = 1 + o.retries;
  auto client = agent::MakeLlmClient(config, options);
  if (!client.ok()) return ReportStatus("llm check", client.status());

  agent::LlmRequest request;
  request.messages = {{"user", "This is a connectivity check. Reply with the single word: ok"}};
  request.temperature = 0;
  request.max_tokens = o.max_tokens;
  agent::CancelToken cancel;
  const agent::LlmResult r = (*client)->Complete(request, cancel);

  if (o.output == "json") {
    nlohmann::json out = {{"ok", r.status.ok()},
                          {"provider", o.provider},
                          {"model", o.model},
                          {"latency_ms", r.latency_ms},
                          {"attempts", r.attempts},
                          {"prompt_tokens", r.prompt_tokens},
                          {"completion_tokens", r.completion_tokens},
                          {"cost_usd", r.cost_usd},
                          {"finish_reason", r.finish_reason},
                          {"reply", r.text},
                          {"note", r.note}};
    if (!r.status.ok()) out["error"] = std::string(r.status.message());
    std::printf("%s\n", DumpJson(out).c_str());
    if (!r.status.ok()) return ReportStatus("llm check", r.status);
    return kExitOk;
  }
  if (!r.status.ok()) return ReportStatus("llm check", r.status);
  std::printf("ok: %s %s answered in %.0f ms (%d attempt%s), %lld prompt + %lld completion tokens",
              o.provider.c_str(), o.model.c_str(), r.latency_ms, r.attempts,
              r.attempts == 1 ? "" : "s", static_cast<long long>(r.prompt_tokens),
              static_cast<long long>(r.completion_tokens));
  if (r.cost_usd > 0) std::printf(", $%.6f", r.cost_usd);
  std::printf("\n");
  std::string reply = r.text;
  if (reply.size() > 200) reply = reply.substr(0, 200) + "...";
  std::printf("reply: %s\n", reply.c_str());
  if (!r.note.empty()) std::printf("note: %s\n", r.note.c_str());
  return kExitOk;
}

}  // namespace

void RegisterLlm(CLI::App& app, int* exit_code) {
  CLI::App* llm = app.add_subcommand("llm", "LLM provider tools");
  llm->require_subcommand(1);
  auto opts = std::make_shared<LlmCheckOptions>();
  CLI::App* check = llm->add_subcommand(
      "check", "Make one short call to a provider; report latency and tokens, or the error");
  check
      ->add_option("--provider", opts->provider,
                   "openai (any OpenAI-compatible server) | anthropic")
      ->required()
      ->check(CLI::IsMember({"openai", "anthropic"}));
  check->add_option("--base-url", opts->base_url,
                    "Endpoint base, e.g. https://api.openai.com/v1, http://localhost:8000/v1 "
                    "(default: the provider's public API)");
  check->add_option("--model", opts->model, "Model name")->required();
  check->add_option("--api-key-env", opts->api_key_env,
                    "Name of the environment variable holding the API key (empty: send no key)");
  check->add_option("--timeout", opts->timeout_s, "Seconds for the call")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  check->add_option("--max-tokens", opts->max_tokens, "Reply token cap")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  check->add_option("--retries", opts->retries, "Retries on 429/5xx/timeouts")
      ->check(CLI::Range(0, 10))
      ->capture_default_str();
  AddOutputOption(check, &opts->output, {"table", "json"});
  check->callback([opts, exit_code] { *exit_code = RunLlmCheck(*opts); });
}

}  // namespace pkforge::cli

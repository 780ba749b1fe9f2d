#include "orchestrator/config.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "common/status.h"
#include "orchestrator/discovery.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"

namespace pkforge::orchestrator {

namespace {

std::vector<std::string> Split(const std::string& s, const std::string& seps) {
  std::vector<std::string> parts;
  for (size_t at = 0;;) {
    const size_t cut = s.find_first_of(seps, at);
    parts.push_back(s.substr(at, cut == std::string::npos ? std::string::npos : cut - at));
    if (cut == std::string::npos) break;
    at = cut + 1;
  }
  return parts;
}

absl::StatusOr<bool> ParseBool(const std::string& key, const std::string& v) {
  if (v == "true" || v == "1" || v == "yes") return true;
  if (v == "false" || v == "0" || v == "no") return false;
  return absl::InvalidArgumentError(fmt::format("--provider {}: expected true or false", key));
}

}  // namespace

absl::StatusOr<LlmProvider> ParseProvider(const std::string& flag) {
  constexpr char kUsage[] =
      "--provider: expected NAME=KIND,BASE_URL[,KEY_ENV] or "
      "name=NAME,kind=KIND,base_url=URL[,key_env=VAR][,models=M1|M2][,allow_client_key=true]";
  LlmProvider p;
  if (flag.rfind("name=", 0) == 0 && flag.find(",kind=") != std::string::npos) {
    for (const std::string& part : Split(flag, ",")) {
      const size_t eq = part.find('=');
      if (eq == std::string::npos) return absl::InvalidArgumentError(kUsage);
      const std::string k = part.substr(0, eq), v = part.substr(eq + 1);
      if (k == "name") {
        p.name = v;
      } else if (k == "kind") {
        p.kind = v;
      } else if (k == "base_url") {
        p.base_url = v;
      } else if (k == "key_env") {
        p.key_env = v;
      } else if (k == "models") {
        for (const std::string& m : Split(v, "|;"))
          if (!m.empty()) p.models.push_back(m);
      } else if (k == "allow_client_key") {
        ASSIGN_OR_RETURN(p.allow_client_key, ParseBool(k, v));
      } else {
        return absl::InvalidArgumentError(fmt::format("--provider: unknown key '{}'", k));
      }
    }
    return p;
  }
  const size_t eq = flag.find('=');
  if (eq == std::string::npos) return absl::InvalidArgumentError(kUsage);
  p.name = flag.substr(0, eq);
  std::vector<std::string> parts = Split(flag.substr(eq + 1), ",");
  if (parts.size() < 2 || parts.size() > 3) return absl::InvalidArgumentError(kUsage);
  p.kind = parts[0];
  p.base_url = parts[1];
  if (parts.size() == 3) p.key_env = parts[2];
  return p;
}

absl::Status CheckProviderUse(const LlmProvider& provider, const std::string& model,
                              const std::string& client_key) {
  if (!provider.models.empty() &&
      std::find(provider.models.begin(), provider.models.end(), model) == provider.models.end()) {
    std::string allowed;
    for (const auto& m : provider.models) allowed += (allowed.empty() ? "" : ", ") + m;
    return absl::InvalidArgumentError(fmt::format(
        "spec.agent.llm.model: not offered by provider '{}' (allowed: {})", provider.name, allowed));
  }
  if (client_key.empty()) return absl::OkStatus();
  if (!provider.allow_client_key) {
    return absl::PermissionDeniedError(fmt::format(
        "spec.agent.llm.api_key: provider '{}' does not accept client keys (its operator "
        "supplies the key)",
        provider.name));
  }
  if (client_key.size() > 4096 ||
      std::any_of(client_key.begin(), client_key.end(),
                  [](char c) { return c < 0x21 || c > 0x7e; })) {
    return absl::InvalidArgumentError(
        "spec.agent.llm.api_key: expected 1-4096 printable ASCII characters without spaces");
  }
  return absl::OkStatus();
}

namespace {

using nlohmann::json;

absl::Status Bad(const std::string& key, const std::string& why) {
  return absl::InvalidArgumentError(fmt::format("config key '{}': {}", key, why));
}

template <typename T>
absl::Status Get(const json& j, const std::string& key, T* out) {
  try {
    *out = j.get<T>();
  } catch (const json::exception& e) {
    return Bad(key, e.what());
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<OrchestratorConfig> LoadConfigFile(const std::string& path,
                                                  OrchestratorConfig base) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(fmt::format("config file {} cannot be read", path));
  json root;
  try {
    root = json::parse(in);
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(fmt::format("config file {}: {}", path, e.what()));
  }
  if (!root.is_object()) return absl::InvalidArgumentError("config file: expected a JSON object");
  OrchestratorConfig& c = base;
  for (auto it = root.begin(); it != root.end(); ++it) {
    const std::string& k = it.key();
    const json& v = it.value();
#define PKF_FIELD(name)                        \
  if (k == #name) {                            \
    RETURN_IF_ERROR(Get(v, k, &c.name));       \
    continue;                                  \
  }
    PKF_FIELD(listen)
    PKF_FIELD(db)
    PKF_FIELD(executor_token_file)
    PKF_FIELD(executors_file)
    PKF_FIELD(discovery_interval_s)
    PKF_FIELD(executor_tls_ca_file)
    PKF_FIELD(token_file)
    PKF_FIELD(tls_cert)
    PKF_FIELD(tls_key)
    PKF_FIELD(metrics_listen)
    PKF_FIELD(log_format)
    PKF_FIELD(log_level)
    PKF_FIELD(log_file)
    PKF_FIELD(max_concurrent_jobs)
    PKF_FIELD(max_queued_jobs)
    PKF_FIELD(max_queued_spec_mib)
    PKF_FIELD(rpc_threads)
    PKF_FIELD(heartbeat_interval_s)
    PKF_FIELD(watch_buffer_events)
    PKF_FIELD(resume_jobs)
    PKF_FIELD(wall_grace_s)
    PKF_FIELD(shutdown_grace_s)
    PKF_FIELD(health_interval_s)
    PKF_FIELD(executor_rpc_timeout_s)
    PKF_FIELD(evaluation_retries)
    PKF_FIELD(max_consecutive_failures)
    PKF_FIELD(llm_max_attempts)
    PKF_FIELD(llm_initial_backoff_ms)
    PKF_FIELD(llm_max_backoff_ms)
    PKF_FIELD(parallel_evaluations)
#undef PKF_FIELD
    if (k == "providers") {
      if (!v.is_array()) return Bad("providers", "expected an array");
      c.providers.clear();
      for (const auto& e : v) {
        if (!e.is_object()) return Bad("providers[]", "expected an object");
        LlmProvider pr;
        for (const auto& f : e.items()) {
          const std::string key = "providers[]." + f.key();
          if (f.key() == "models") {
            RETURN_IF_ERROR(Get(f.value(), key, &pr.models));
            continue;
          }
          if (f.key() == "allow_client_key") {
            RETURN_IF_ERROR(Get(f.value(), key, &pr.allow_client_key));
            continue;
          }
          if (!f.value().is_string()) return Bad(key, "expected a string");
          if (f.key() == "name") pr.name = f.value().get<std::string>();
          else if (f.key() == "kind") pr.kind = f.value().get<std::string>();
          else if (f.key() == "base_url") pr.base_url = f.value().get<std::string>();
          else if (f.key() == "key_env") pr.key_env = f.value().get<std::string>();
          else return Bad(key, "unknown key");
        }
        c.providers.push_back(std::move(pr));
      }
      continue;
    }
    if (k == "replay_root") {
      if (!v.is_string()) return Bad(k, "expected a string");
      c.replay_root = v.get<std::string>();
      continue;
    }
    if (k == "executors") {
      if (!v.is_array()) return Bad(k, "expected an array");
      c.executors.clear();
      for (const auto& e : v) {
        ExecutorEndpoint ep;
        if (e.is_string()) {
          ep.address = e.get<std::string>();
        } else if (e.is_object()) {
          for (auto f = e.begin(); f != e.end(); ++f) {
            const std::string key = "executors[]." + f.key();
            if (f.key() == "address") {
              RETURN_IF_ERROR(Get(f.value(), key, &ep.address));
            } else if (f.key() == "token_file") {
              RETURN_IF_ERROR(Get(f.value(), key, &ep.token_file));
            } else if (f.key() == "tls") {
              RETURN_IF_ERROR(Get(f.value(), key, &ep.tls));
            } else if (f.key() == "tls_ca_file") {
              RETURN_IF_ERROR(Get(f.value(), key, &ep.tls_ca_file));
            } else {
              return Bad(key, "unknown key");
            }
          }
        } else {
          return Bad(k, "each executor is \"HOST:PORT\" or {\"address\": ..., \"token_file\": ...}");
        }
        c.executors.push_back(std::move(ep));
      }
      continue;
    }
    return Bad(k, "unknown key");
  }
  return c;
}

absl::Status ValidateConfig(const OrchestratorConfig& c) {
  std::set<std::string> provider_names;
  for (const auto& pr : c.providers) {
    if (pr.name.empty() || pr.name.size() > 64 ||
        pr.name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") !=
            std::string::npos)
      return Bad("providers[].name", fmt::format("'{}': 1-64 of [A-Za-z0-9_.-]", pr.name));
    if (!provider_names.insert(pr.name).second)
      return Bad("providers[].name", fmt::format("'{}' twice", pr.name));
    if (pr.kind != "openai" && pr.kind != "anthropic")
      return Bad("providers[].kind", fmt::format("'{}': expected openai or anthropic", pr.kind));
    if (pr.base_url.rfind("http://", 0) != 0 && pr.base_url.rfind("https://", 0) != 0)
      return Bad("providers[].base_url", fmt::format("'{}': expected an http(s) URL", pr.base_url));
    for (const auto& m : pr.models) {
      if (m.empty() || m.size() > 256)
        return Bad("providers[].models", fmt::format("provider '{}': names of 1-256 bytes", pr.name));
    }
  }
  if (c.listen.find(':') == std::string::npos) return Bad("listen", "expected HOST:PORT");
  if (c.db.empty()) return Bad("db", "is empty");
  if (c.max_concurrent_jobs < 1) return Bad("max_concurrent_jobs", "must be >= 1");
  if (c.max_queued_jobs < 1) return Bad("max_queued_jobs", "must be >= 1");
  if (c.max_queued_spec_mib < 1) return Bad("max_queued_spec_mib", "must be >= 1");
  if (c.rpc_threads < 1) return Bad("rpc_threads", "must be >= 1");
  if (!(c.heartbeat_interval_s > 0)) return Bad("heartbeat_interval_s", "must be > 0");
  if (c.watch_buffer_events < 1) return Bad("watch_buffer_events", "must be >= 1");
  if (!(c.health_interval_s > 0)) return Bad("health_interval_s", "must be > 0");
  if (!(c.executor_rpc_timeout_s > 0)) return Bad("executor_rpc_timeout_s", "must be > 0");
  if (c.evaluation_retries < 0) return Bad("evaluation_retries", "must be >= 0");
  if (c.wall_grace_s < 0) return Bad("wall_grace_s", "must be >= 0");
  if (c.shutdown_grace_s < 0) return Bad("shutdown_grace_s", "must be >= 0");
  if (c.log_format != "text" && c.log_format != "json") {
    return Bad("log_format", "expected text or json");
  }
  if (c.tls_cert.empty() != c.tls_key.empty()) {
    return Bad("tls_cert", "tls_cert and tls_key go together");
  }
  for (const auto& e : c.executors) {
    auto t = ParseExecutorTarget(e.address);
    if (!t.ok()) return Bad("executors", std::string(t.status().message()));
  }
  if (!(c.discovery_interval_s > 0)) return Bad("discovery_interval_s", "must be > 0");
  return absl::OkStatus();
}

}  // namespace pkforge::orchestrator

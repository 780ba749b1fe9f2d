#include "orchestrator/config.h"

#include <set>

#include <fstream>
#include <sstream>

#include "common/status.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"

namespace pkforge::orchestrator {

absl::StatusOr<LlmProvider> ParseProvider(const std::string& flag) {
  const size_t eq = flag.find('=');
  if (eq == std::string::npos)
    return absl::InvalidArgumentError("--provider: expected NAME=KIND,BASE_URL[,KEY_ENV]");
  LlmProvider p;
  p.name = flag.substr(0, eq);
  std::vector<std::string> parts;
  std::string rest = flag.substr(eq + 1);
  for (size_t at = 0;;) {
    const size_t comma = rest.find(',', at);
    parts.push_back(rest.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  if (parts.size() < 2 || parts.size() > 3)
    return absl::InvalidArgumentError("--provider: expected NAME=KIND,BASE_URL[,KEY_ENV]");
  p.kind = parts[0];
  p.base_url = parts[1];
  if (parts.size() == 3) p.key_env = parts[2];
  return p;
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
    PKF_FIELD(token_file)
    PKF_FIELD(tls_cert)
    PKF_FIELD(tls_key)
    PKF_FIELD(metrics_listen)
    PKF_FIELD(log_format)
    PKF_FIELD(log_level)
    PKF_FIELD(log_file)
    PKF_FIELD(max_concurrent_jobs)
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
  }
  if (c.listen.find(':') == std::string::npos) return Bad("listen", "expected HOST:PORT");
  if (c.db.empty()) return Bad("db", "is empty");
  if (c.max_concurrent_jobs < 1) return Bad("max_concurrent_jobs", "must be >= 1");
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
    if (e.address.find(':') == std::string::npos) {
      return Bad("executors", fmt::format("'{}': expected HOST:PORT", e.address));
    }
  }
  return absl::OkStatus();
}

bool IsLoopbackAddress(const std::string& address) {
  auto colon = address.rfind(':');
  std::string host = colon == std::string::npos ? address : address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host == "localhost" || host == "::1") return true;
  return host.rfind("127.", 0) == 0;
}

absl::StatusOr<std::string> ReadSecretFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(fmt::format("token file {} cannot be read", path));
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  const char* ws = " \t\r\n";
  s.erase(0, s.find_first_not_of(ws));
  auto last = s.find_last_not_of(ws);
  s.erase(last == std::string::npos ? 0 : last + 1);
  if (s.empty()) return absl::InvalidArgumentError(fmt::format("token file {} is empty", path));
  return s;
}

}  // namespace pkforge::orchestrator

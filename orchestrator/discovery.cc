#include "orchestrator/discovery.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "fmt/format.h"

namespace pkforge::orchestrator {

absl::StatusOr<ExecutorTarget> ParseExecutorTarget(const std::string& text) {
  ExecutorTarget t;
  t.text = text;
  std::string rest;
  if (text.rfind("dns:///", 0) == 0) {
    rest = text.substr(7);
  } else if (text.rfind("dns://", 0) == 0) {
    return absl::InvalidArgumentError(fmt::format(
        "executor '{}': a DNS server in the target is not supported (use dns:///NAME:PORT; "
        "names are resolved by the system resolver, /etc/resolv.conf)",
        text));
  } else if (text.rfind("dns:", 0) == 0) {
    rest = text.substr(4);
  } else {
    if (text.empty() || text.find(':') == std::string::npos || text.back() == ':') {
      return absl::InvalidArgumentError(
          fmt::format("executor '{}': expected HOST:PORT or dns:///NAME:PORT", text));
    }
    return t;
  }
  t.dns = true;
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == rest.size()) {
    return absl::InvalidArgumentError(
        fmt::format("executor '{}': expected dns:///NAME:PORT (the port is required)", text));
  }
  t.host = rest.substr(0, colon);
  t.port = rest.substr(colon + 1);
  if (t.host.size() >= 2 && t.host.front() == '[' && t.host.back() == ']') {
    t.host = t.host.substr(1, t.host.size() - 2);
  }
  if (t.port.find_first_not_of("0123456789") != std::string::npos || t.port.size() > 5 ||
      std::stoi(t.port) == 0 || std::stoi(t.port) > 65535) {
    return absl::InvalidArgumentError(
        fmt::format("executor '{}': port '{}' is not a number in 1..65535", text, t.port));
  }
  return t;
}

std::string JoinHostPort(const std::string& ip, const std::string& port) {
  if (ip.find(':') != std::string::npos) return fmt::format("[{}]:{}", ip, port);
  return fmt::format("{}:{}", ip, port);
}

namespace {

class GetaddrinfoResolver final : public Resolver {
 public:
  absl::StatusOr<std::vector<std::string>> Resolve(const std::string& host) override {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
    if (rc != 0) {
      const std::string why = rc == EAI_SYSTEM ? std::strerror(errno) : gai_strerror(rc);
      if (rc == EAI_NONAME || rc == EAI_NODATA) {
        return absl::NotFoundError(fmt::format("resolving {}: {}", host, why));
      }
      return absl::UnavailableError(fmt::format("resolving {}: {}", host, why));
    }
    std::vector<std::string> out;
    for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
      char buf[INET6_ADDRSTRLEN] = {};
      const void* src = a->ai_family == AF_INET
                            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr)
                            : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr);
      if ((a->ai_family == AF_INET || a->ai_family == AF_INET6) &&
          inet_ntop(a->ai_family, src, buf, sizeof buf) != nullptr) {
        out.emplace_back(buf);
      }
    }
    freeaddrinfo(res);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    if (out.empty()) return absl::NotFoundError(fmt::format("resolving {}: no address", host));
    return out;
  }
};

}  // namespace

std::shared_ptr<Resolver> SystemResolver() { return std::make_shared<GetaddrinfoResolver>(); }

absl::StatusOr<std::vector<std::string>> ReadExecutorsFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(
        fmt::format("executors file {}: cannot read ({})", path, std::strerror(errno)));
  }
  std::vector<std::string> out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    const size_t hash = line.find('#');
    if (hash != std::string::npos) line.erase(hash);
    const char* ws = " \t\r";
    line.erase(0, line.find_first_not_of(ws));
    const size_t last = line.find_last_not_of(ws);
    line.erase(last == std::string::npos ? 0 : last + 1);
    if (line.empty()) continue;
    if (line.find_first_of(ws) != std::string::npos) {
      return absl::InvalidArgumentError(
          fmt::format("executors file {}:{}: '{}': one HOST:PORT or dns:///NAME:PORT per line",
                      path, n, line));
    }
    auto target = ParseExecutorTarget(line);
    if (!target.ok()) {
      return absl::InvalidArgumentError(
          fmt::format("executors file {}:{}: {}", path, n, std::string(target.status().message())));
    }
    if (std::find(out.begin(), out.end(), line) == out.end()) out.push_back(line);
  }
  if (in.bad()) return absl::UnavailableError(fmt::format("executors file {}: read error", path));
  return out;
}

}  // namespace pkforge::orchestrator

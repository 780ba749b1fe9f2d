// Where the orchestrator's executors come from (issue 19 items 4 and 5):
//
// - a target "HOST:PORT" (or anything else gRPC dials, e.g. "[::1]:50051")
//   is one executor, always;
// - a target "dns:///NAME:PORT" (also "dns:NAME:PORT") is one executor per
//   address NAME resolves to (A and AAAA records; a Kubernetes headless
//   Service answers one per ready pod), re-resolved every
//   discovery_interval_s, so executors joining and leaving are followed;
// - an executors file (--executors-file) holds targets of either form, one a
//   line, '#' starting a comment; it is re-read on SIGHUP and when its
//   modification time or size changes.
//
// The orchestrator resolves names itself instead of handing "dns:///" to one
// gRPC channel: one channel per address is what lets the pool health-check
// each executor, count its evaluations in flight, dispatch to the least
// loaded one and retry elsewhere when one dies. With TLS, each address's
// certificate is verified against NAME (the name that was resolved).
//
// A name that does not exist or has no address (NXDOMAIN/NODATA) is an empty
// set: its executors are drained. A temporary failure (no answer from the
// resolver) keeps the executors it had, so a DNS hiccup never empties the pool.
//
// Threading: the free functions are pure or read files; a Resolver must be
// callable from any thread (the pool calls it from its health thread and
// from whoever calls Refresh).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace pkforge::orchestrator {

struct ExecutorTarget {
  bool dns = false;
  std::string text;  // as written
  std::string host;  // dns: the name to resolve
  std::string port;  // dns: the port every address gets
};

// "HOST:PORT" -> static; "dns:///NAME:PORT" or "dns:NAME:PORT" -> dns.
// INVALID_ARGUMENT naming the target when it has no port, or names a DNS
// server ("dns://SERVER/...": the system resolver is used, /etc/resolv.conf).
absl::StatusOr<ExecutorTarget> ParseExecutorTarget(const std::string& text);

// "10.0.0.5", "50051" -> "10.0.0.5:50051"; an IPv6 address gets brackets.
std::string JoinHostPort(const std::string& ip, const std::string& port);

class Resolver {
 public:
  virtual ~Resolver() = default;
  // The addresses of `host` (numeric, IPv6 without brackets), sorted and
  // without duplicates. NOT_FOUND: the name has no address (drain its
  // executors); any other error: temporary (keep them).
  virtual absl::StatusOr<std::vector<std::string>> Resolve(const std::string& host) = 0;
};

// getaddrinfo(3): the system's resolver order (nsswitch: /etc/hosts, DNS).
std::shared_ptr<Resolver> SystemResolver();

// The targets in an executors file, in order, without duplicates. Errors
// name the file and line ("FILE:3: 'x': expected HOST:PORT or dns:///NAME:PORT").
absl::StatusOr<std::vector<std::string>> ReadExecutorsFile(const std::string& path);

}  // namespace pkforge::orchestrator

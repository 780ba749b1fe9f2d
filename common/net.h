// Network facts and bearer-token checks shared by both daemons and the CLI,
// so that the two cannot drift (they did: one treated unix: sockets as local,
// the other did not; one compared tokens raw, the other by digest).
//
// Thread safety: IsLoopbackAddress and ReadTokenFile are free functions,
// safe from any thread; a BearerToken is immutable after construction and
// may be used from any thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace pkforge {

// True when `host_port` can only be reached from this machine: 127.0.0.0/8,
// ::1, "localhost", or a unix-domain socket ("unix:PATH", "unix-abstract:"),
// which only processes on this host with access to the path reach. Accepts
// "host:port", "[v6]:port" and bare hosts. Anything else (0.0.0.0, [::], a
// name, a routable address) is not loopback: it needs a token.
bool IsLoopbackAddress(std::string_view host_port);

// The token a daemon requires in "authorization: Bearer <token>" metadata.
// Only a SHA-256 digest of it is kept, and the comparison is of digests in
// constant time, so neither the token's bytes nor its length leak through
// timing.
class BearerToken {
 public:
  BearerToken() = default;
  explicit BearerToken(std::string_view token);
  // No token configured: every request passes.
  bool empty() const { return digest_.empty(); }
  // `authorization` is the metadata value as sent ("Bearer <token>").
  bool Matches(std::string_view authorization) const;

 private:
  std::string digest_;  // hex SHA-256 of the token; empty = no token
};

// Who reads a token file: the daemon that will require the token from its
// clients, or a client (the CLI, the orchestrator dialling executors) that
// will send it.
enum class TokenRole { kRequire, kSend };

// A token a daemon requires is at least this long: a short one could be
// guessed by anyone who can reach the port.
inline constexpr size_t kMinRequiredTokenLength = 16;

// The one token-file format of both daemons and the CLI: the whole file with
// surrounding whitespace trimmed, which must be one run of printable ASCII
// without blanks (what "authorization: Bearer <token>" metadata can carry).
// Refused, with `what` (the flag or config key) and the path in the message:
// an unreadable file (NOT_FOUND), an empty token, a token with a blank or a
// control character inside (a multi-line file: the executor used to take the
// first line silently, the orchestrator the whole text, which gRPC then
// refused on every call), and, for kRequire only, a token shorter than
// kMinRequiredTokenLength (the orchestrator used to accept any non-empty
// one). Clients send what the file holds: the daemon decides, and a client's
// "refused" names the file.
absl::StatusOr<std::string> ReadTokenFile(const std::string& path, TokenRole role,
                                          std::string_view what = "token file");

}  // namespace pkforge

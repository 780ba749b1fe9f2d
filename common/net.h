// Network facts and bearer-token checks shared by both daemons and the CLI,
// so that the two cannot drift (they did: one treated unix: sockets as local,
// the other did not; one compared tokens raw, the other by digest).
//
// Thread safety: IsLoopbackAddress is a pure function; a BearerToken is
// immutable after construction and may be used from any thread.
#pragma once

#include <string>
#include <string_view>

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

}  // namespace pkforge

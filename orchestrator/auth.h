// Bearer-token check of incoming RPCs: the one place the orchestrator decides
// whether a caller may use the API.
//
// Contract
// - With no token configured (loopback listeners only; main refuses to
//   listen elsewhere without one) every call is allowed.
// - With a token, a call must carry metadata "authorization: Bearer <token>";
//   otherwise UNAUTHENTICATED (the message never echoes what was sent). The
//   comparison is constant-time over SHA-256 digests, so neither the content
//   nor the length of the token leaks through timing.
// - The gRPC health service is not routed through here (it stays open for
//   load balancers and probes).
//
// Threading: immutable after construction; Check() is safe from any thread.
#pragma once

#include <grpcpp/server_context.h>

#include <string>

#include "common/net.h"

namespace pkforge::orchestrator {

class Authenticator {
 public:
  explicit Authenticator(std::string token = "");
  grpc::Status Check(const grpc::CallbackServerContext* ctx) const;
  bool enabled() const { return !token_.empty(); }

 private:
  BearerToken token_;  // common/net.h: digest, constant-time comparison
};

}  // namespace pkforge::orchestrator

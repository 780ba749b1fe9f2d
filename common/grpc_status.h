// The one place where absl::Status and grpc::Status meet (triton style: the
// edge translates internal status to the wire status, nothing else does).
//
// Header-only on purpose: pkforge_common must not link gRPC, because the
// worker that hosts untrusted candidate code links common but never gRPC.
// Only targets that already link gRPC (executor, orchestrator, cli) include it.
//
// Thread safety: pure functions.
#pragma once

#include <grpcpp/support/status.h>

#include <string>

#include "absl/status/status.h"

namespace pkforge {

// absl and gRPC share the canonical code numbering (0..16); the static_asserts
// keep us honest if either side ever changes.
static_assert(static_cast<int>(absl::StatusCode::kUnauthenticated) ==
              static_cast<int>(grpc::StatusCode::UNAUTHENTICATED));
static_assert(static_cast<int>(absl::StatusCode::kDataLoss) ==
              static_cast<int>(grpc::StatusCode::DATA_LOSS));

inline grpc::Status ToGrpcStatus(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

inline absl::Status FromGrpcStatus(const grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  int code = static_cast<int>(s.error_code());
  if (code < 0 || code > static_cast<int>(absl::StatusCode::kUnauthenticated)) {
    return absl::UnknownError(s.error_message());
  }
  return absl::Status(static_cast<absl::StatusCode>(code), s.error_message());
}

}  // namespace pkforge

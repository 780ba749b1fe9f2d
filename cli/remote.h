// The client side of the Orchestrator API for the `pkforge` commands that
// talk to a running orchestrator (cli/remote.cc, and cli/analysis.cc when no
// --db is given).
//
// Address: --orchestrator HOST:PORT, else $PKFORGE_ORCHESTRATOR, else
// 127.0.0.1:50061. A --token-file (else $PKFORGE_TOKEN_FILE) adds
// "authorization: Bearer <token>"; --tls-ca (else $PKFORGE_TLS_CA) speaks TLS
// and trusts only that CA's certificates. RemoteOptions::Add is the one
// definition of these flags for every remote command; a flag wins over the
// environment (only commands that called Add read the environment, so
// `pkforge local`'s loopback connection is never redirected by it).
//
// Thread safety: one Remote per command, used by one thread.
#pragma once

#include <grpcpp/grpcpp.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "pkforge/v1/orchestrator.grpc.pb.h"

namespace pkforge::cli {

struct RemoteOptions {
  std::string orchestrator;  // "" = $PKFORGE_ORCHESTRATOR or the default
  std::string token_file;  // "" = no token
  std::string tls_ca;      // PEM CA file; "" = plaintext
  void Add(CLI::App* cmd);
};

class Remote {
 public:
  static absl::StatusOr<Remote> Connect(const RemoteOptions& options);

  // A context with the token and, when `timeout_s` > 0, a deadline.
  std::unique_ptr<grpc::ClientContext> Context(double timeout_s = 30) const;
  v1::Orchestrator::Stub* stub() const { return stub_.get(); }
  const std::string& address() const { return address_; }
  bool tls() const { return tls_; }
  bool has_token() const { return !token_.empty(); }

 private:
  std::string address_;
  std::string token_;
  bool tls_ = false;
  std::shared_ptr<v1::Orchestrator::Stub> stub_;
};

// grpc -> absl, with the address in UNAVAILABLE messages so "is it running?"
// is answered by the error itself.
absl::Status RemoteError(const Remote& remote, const grpc::Status& status);

// "90s", "10m", "1h" (a bare number is seconds) -> seconds; "" -> 0.
absl::StatusOr<double> ParseDuration(const std::string& text);

// Follows a job with a live progress line until it ends (resuming dropped
// streams); returns the exit code for its final state.
int RunWatch(const Remote& remote, const std::string& job_id, bool json);

// Proto3 JSON of any message (for --json output).
std::string ToJsonText(const google::protobuf::Message& m);

}  // namespace pkforge::cli

// TLS credentials for every gRPC server and client of pkforge (both daemons,
// the orchestrator dialling executors, the CLI, the test fakes): one place
// that reads the PEM files, checks they are PEM, and names the flag in its
// errors. Before, each of the four set TLS up on its own; the servers did
// not check the files, so a wrong path or a non-PEM file surfaced as
// "cannot listen on ADDRESS".
//
// Thread safety: free functions, safe from any thread.
#pragma once

#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace pkforge::rpc {

// Plaintext when both paths are empty; TLS with the certificate chain and
// private key (PEM files) otherwise. One without the other, an unreadable
// file or a file that is not PEM is INVALID_ARGUMENT naming `what` (the
// flag or config key of the certificate) and the path.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentials(
    const std::string& cert_file, const std::string& key_file,
    std::string_view what = "tls_cert");

// Plaintext unless `tls`; with TLS the server is verified against the CA
// certificates in `ca_file` (PEM) or, when it is empty, the system's roots.
// An unreadable or non-PEM CA file is INVALID_ARGUMENT "<what> <path>: ...".
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> ChannelCredentials(
    bool tls, const std::string& ca_file, std::string_view what = "tls_ca");

// The contents of a PEM file that must hold `marker` (e.g. "CERTIFICATE",
// "PRIVATE KEY"); the errors above come from here.
absl::StatusOr<std::string> ReadPemFile(const std::string& path, std::string_view marker,
                                        std::string_view what);

}  // namespace pkforge::rpc

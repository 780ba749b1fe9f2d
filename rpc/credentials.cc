#include "rpc/credentials.h"

#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>

#include <cctype>

#include "fmt/format.h"
#include "common/files.h"
#include "common/status.h"

namespace pkforge::rpc {

absl::StatusOr<std::string> ReadPemFile(const std::string& path, std::string_view marker,
                                        std::string_view what) {
  auto text = ReadFileToString(path);
  if (!text.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("{} {}: cannot read ({})", what, path, std::string(text.status().message())));
  }
  // "-----BEGIN CERTIFICATE-----", "-----BEGIN PRIVATE KEY-----",
  // "-----BEGIN RSA PRIVATE KEY-----", "-----BEGIN EC PRIVATE KEY-----".
  const size_t begin = text->find("-----BEGIN ");
  const size_t end = begin == std::string::npos ? begin : text->find("-----", begin + 11);
  if (begin == std::string::npos || end == std::string::npos ||
      text->substr(begin, end - begin).find(marker) == std::string::npos) {
    std::string kind(marker);
    for (char& c : kind) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return absl::InvalidArgumentError(fmt::format("{} {}: not a PEM {}", what, path, kind));
  }
  return *std::move(text);
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentials(
    const std::string& cert_file, const std::string& key_file, std::string_view what) {
  if (cert_file.empty() && key_file.empty()) return grpc::InsecureServerCredentials();
  if (cert_file.empty() || key_file.empty()) {
    return absl::InvalidArgumentError(
        fmt::format("{}: the TLS certificate and key go together (give both or neither)", what));
  }
  grpc::SslServerCredentialsOptions ssl;
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  ASSIGN_OR_RETURN(pair.cert_chain, ReadPemFile(cert_file, "CERTIFICATE", what));
  ASSIGN_OR_RETURN(pair.private_key,
                   ReadPemFile(key_file, "PRIVATE KEY", fmt::format("{}'s key", what)));
  ssl.pem_key_cert_pairs.push_back(std::move(pair));
  return grpc::SslServerCredentials(ssl);
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> ChannelCredentials(
    bool tls, const std::string& ca_file, std::string_view what) {
  if (!tls) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions ssl;
  if (!ca_file.empty()) {
    ASSIGN_OR_RETURN(ssl.pem_root_certs, ReadPemFile(ca_file, "CERTIFICATE", what));
  }
  return grpc::SslCredentials(ssl);
}

}  // namespace pkforge::rpc

#include "orchestrator/auth.h"

#include <openssl/crypto.h>

#include "common/sha256.h"

namespace pkforge::orchestrator {

Authenticator::Authenticator(std::string token)
    : digest_(token.empty() ? "" : Sha256Hex(token)) {}

grpc::Status Authenticator::Check(const grpc::CallbackServerContext* ctx) const {
  if (digest_.empty()) return grpc::Status::OK;
  static const grpc::Status kDenied(grpc::StatusCode::UNAUTHENTICATED,
                                    "missing or invalid bearer token (metadata "
                                    "'authorization: Bearer <token>')");
  const auto& md = ctx->client_metadata();
  auto it = md.find("authorization");
  if (it == md.end()) return kDenied;
  std::string value(it->second.data(), it->second.size());
  constexpr std::string_view kPrefix = "Bearer ";
  if (value.size() < kPrefix.size() || value.compare(0, kPrefix.size(), kPrefix) != 0) {
    return kDenied;
  }
  const std::string digest = Sha256Hex(std::string_view(value).substr(kPrefix.size()));
  if (CRYPTO_memcmp(digest.data(), digest_.data(), digest_.size()) != 0) return kDenied;
  return grpc::Status::OK;
}

}  // namespace pkforge::orchestrator

#include "orchestrator/auth.h"

namespace pkforge::orchestrator {

Authenticator::Authenticator(std::string token) : token_(token) {}

grpc::Status Authenticator::Check(const grpc::CallbackServerContext* ctx) const {
  if (token_.empty()) return grpc::Status::OK;
  static const grpc::Status kDenied(grpc::StatusCode::UNAUTHENTICATED,
                                    "missing or invalid bearer token (metadata "
                                    "'authorization: Bearer <token>')");
  const auto& md = ctx->client_metadata();
  auto it = md.find("authorization");
  if (it == md.end()) return kDenied;
  if (!token_.Matches(std::string_view(it->second.data(), it->second.size()))) return kDenied;
  return grpc::Status::OK;
}

}  // namespace pkforge::orchestrator

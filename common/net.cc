#include "common/net.h"

#include <openssl/crypto.h>

#include "absl/strings/ascii.h"
#include "fmt/format.h"
#include "common/files.h"
#include "common/sha256.h"

namespace pkforge {

bool IsLoopbackAddress(std::string_view host_port) {
  if (host_port.rfind("unix:", 0) == 0 || host_port.rfind("unix-abstract:", 0) == 0) return true;
  std::string_view host = host_port;
  if (!host.empty() && host.front() == '[') {
    const size_t close = host.find(']');
    if (close == std::string_view::npos) return false;
    host = host.substr(1, close - 1);
  } else if (const size_t colon = host.rfind(':'); colon != std::string_view::npos) {
    // A bare IPv6 address has several colons and no port: "::1".
    if (host.find(':') == colon) host = host.substr(0, colon);
  }
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

BearerToken::BearerToken(std::string_view token)
    : digest_(token.empty() ? std::string() : Sha256Hex(token)) {}

bool BearerToken::Matches(std::string_view authorization) const {
  if (digest_.empty()) return true;
  constexpr std::string_view kPrefix = "Bearer ";
  if (authorization.substr(0, kPrefix.size()) != kPrefix) return false;
  const std::string given = Sha256Hex(authorization.substr(kPrefix.size()));
  return given.size() == digest_.size() &&
         CRYPTO_memcmp(given.data(), digest_.data(), digest_.size()) == 0;
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& path, TokenRole role,
                                          std::string_view what) {
  auto text = ReadFileToString(path);
  if (!text.ok()) {
    return absl::Status(text.status().code(),
                        fmt::format("{}: {}", what, std::string(text.status().message())));
  }
  const std::string token(absl::StripAsciiWhitespace(*text));
  auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(fmt::format("{} {}: {}", what, path, why));
  };
  if (token.empty()) return bad("is empty");
  for (const char c : token) {
    if (c <= ' ' || c > '~') {
      return bad(
          "the token has a blank, a line break or a non-printable character inside (one line of "
          "printable ASCII expected)");
    }
  }
  if (role == TokenRole::kRequire && token.size() < kMinRequiredTokenLength) {
    return bad(fmt::format("token shorter than {} characters", kMinRequiredTokenLength));
  }
  return token;
}

}  // namespace pkforge

#include "kernels/harness/result_frame.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/random.h>

#include <cstdio>

#include "fmt/format.h"

namespace pkforge::kernels {
namespace {

constexpr std::string_view kHead = "PKFORGE-RESULT/1 ";
constexpr std::string_view kEnd = "\nPKFORGE-END\n";

std::string Hex(const unsigned char* p, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += fmt::format("{:02x}", p[i]);
  return s;
}

std::string Mac(std::string_view json, std::string_view key) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(json.data()), json.size(), out, &len);
  return Hex(out, len);
}

}  // namespace

std::string NewResultKey() {
  unsigned char k[32];
  size_t got = 0;
  while (got < sizeof k) {
    const ssize_t n = getrandom(k + got, sizeof k - got, 0);
    if (n > 0) got += static_cast<size_t>(n);
  }
  return Hex(k, sizeof k);
}

std::string FrameResult(std::string_view json, std::string_view key) {
  return fmt::format("{}{} {}\n{}{}", kHead, json.size(), Mac(json, key), json, kEnd);
}

absl::StatusOr<std::string> ParseFramedResult(std::string_view output, std::string_view key,
                                              bool truncated) {
  if (truncated)
    return absl::DataLossError(
        fmt::format("result channel: output cut at {} bytes (overflow)", output.size()));
  if (output.substr(0, kHead.size()) != kHead)
    return absl::DataLossError(fmt::format(
        "result channel: {} byte(s) before the result frame (or no frame)",
        output.find(kHead) == std::string_view::npos ? output.size() : output.find(kHead)));
  const size_t nl = output.find('\n');
  if (nl == std::string_view::npos) return absl::DataLossError("result channel: truncated header");
  const std::string_view header = output.substr(kHead.size(), nl - kHead.size());
  const size_t sp = header.find(' ');
  if (sp == std::string_view::npos) return absl::DataLossError("result channel: malformed header");
  size_t len = 0;
  for (char c : header.substr(0, sp)) {
    if (c < '0' || c > '9' || len > (size_t{1} << 40))
      return absl::DataLossError("result channel: malformed length");
    len = len * 10 + static_cast<size_t>(c - '0');
  }
  const std::string_view mac = header.substr(sp + 1);
  if (output.size() - (nl + 1) < len + kEnd.size())
    return absl::DataLossError(fmt::format("result channel: frame announces {} bytes, {} arrived",
                                           len, output.size() - (nl + 1)));
  const std::string_view json = output.substr(nl + 1, len);
  const std::string_view rest = output.substr(nl + 1 + len);
  if (rest.substr(0, kEnd.size()) != kEnd) return absl::DataLossError("result channel: no end marker");
  if (rest.size() != kEnd.size())
    return absl::DataLossError(
        fmt::format("result channel: {} byte(s) after the result frame", rest.size() - kEnd.size()));
  const std::string want = Mac(json, key);
  if (mac.size() != want.size() || CRYPTO_memcmp(mac.data(), want.data(), want.size()) != 0)
    return absl::DataLossError("result channel: the frame's MAC does not match (not the judge's)");
  return std::string(json);
}

}  // namespace pkforge::kernels

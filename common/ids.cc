#include "common/ids.h"

#include <sys/random.h>

#include <array>
#include <cerrno>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "common/status.h"

namespace pkforge {
namespace {
constexpr char kCrockford[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

void FillRandom(uint8_t* buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = getrandom(buf + got, n - got, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      // getrandom cannot fail after early boot on Linux >= 3.17; ids are not
      // secrets, so fall back to mixing the clock rather than aborting.
      for (size_t i = got; i < n; ++i) {
        buf[i] = static_cast<uint8_t>(SystemClock::Get()->NowMonotonicMicros() >> (i % 8));
      }
      return;
    }
    got += static_cast<size_t>(r);
  }
}
}  // namespace

std::string NewId(std::string_view prefix, int64_t wall_us) {
  // 128 bits: 48-bit ms timestamp, 80 random bits; 26 base32 digits = 130 bits.
  std::array<uint8_t, 16> b{};
  uint64_t ms = static_cast<uint64_t>(wall_us / 1000);
  for (int i = 0; i < 6; ++i) b[i] = static_cast<uint8_t>(ms >> (8 * (5 - i)));
  FillRandom(b.data() + 6, 10);
  // Encode 128 bits big-endian as 26 base32 digits (130 bits; the first digit
  // carries the top 3 bits). Digit i covers bits [128-5*(26-i), ...).
  std::string out(26, '0');
  for (int i = 0; i < 26; ++i) {
    int hi_bit = 130 - 5 * i;  // exclusive upper bound, counted from bit 0 = LSB
    int value = 0;
    for (int bit = hi_bit - 1; bit >= hi_bit - 5; --bit) {
      int v = 0;
      if (bit < 128) v = (b[15 - bit / 8] >> (bit % 8)) & 1;
      value = (value << 1) | v;
    }
    out[i] = kCrockford[value];
  }
  return absl::StrCat(AsAbsl(prefix), "_", out);
}

std::string NewId(std::string_view prefix) {
  return NewId(prefix, SystemClock::Get()->NowWallMicros());
}

absl::Status ValidateId(std::string_view id, std::string_view prefix) {
  if (id.empty()) return absl::InvalidArgumentError(absl::StrCat("empty ", AsAbsl(prefix), " id"));
  if (id.size() != prefix.size() + 27 || id.substr(0, prefix.size()) != prefix ||
      id[prefix.size()] != '_') {
    return absl::InvalidArgumentError(
        absl::StrCat("malformed ", AsAbsl(prefix), " id '", AsAbsl(id.substr(0, 64)),
                     "': expected ", AsAbsl(prefix), "_ followed by 26 base32 characters"));
  }
  for (char c : id.substr(prefix.size() + 1)) {
    if (std::string_view(kCrockford).find(c) == std::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat("malformed ", AsAbsl(prefix), " id '",
                                                     AsAbsl(id.substr(0, 64)), "': bad character"));
    }
  }
  return absl::OkStatus();
}

}  // namespace pkforge

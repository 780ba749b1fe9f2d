#include "common/ids.h"

#include <sys/random.h>

#include <array>
#include <cerrno>
#include <mutex>

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

// The last id handed out in this process: ids made in one millisecond (or
// after the clock stepped back) continue from it instead of drawing fresh
// random bits, so that creation order is id order within a process.
struct LastId {
  std::mutex mu;
  uint64_t ms = 0;
  std::array<uint8_t, 10> rand{};
  bool valid = false;
};

// Two sequences: ids on the system clock, and ids at times the caller names
// (tests, fake clocks), so that an explicit historical or future time never
// moves the system sequence back or forward.
LastId& Last(bool system) {
  // Never destroyed: NewId may run during exit.
  static LastId* system_last = new LastId();
  static LastId* explicit_last = new LastId();
  return system ? *system_last : *explicit_last;
}

// rand += addend (big-endian, 80 bits); true on overflow out of the top byte.
bool AddBigEndian(std::array<uint8_t, 10>& rand, uint64_t addend) {
  uint64_t carry = addend;
  for (int i = 9; i >= 0 && carry != 0; --i) {
    uint64_t sum = uint64_t{rand[i]} + (carry & 0xff);
    rand[i] = static_cast<uint8_t>(sum);
    carry = (carry >> 8) + (sum >> 8);
  }
  return carry != 0;
}

std::string Encode(std::string_view prefix, uint64_t ms, const std::array<uint8_t, 10>& rand) {
  // 128 bits: 48-bit ms timestamp, 80 random bits; 26 base32 digits = 130 bits.
  std::array<uint8_t, 16> b{};
  for (int i = 0; i < 6; ++i) b[i] = static_cast<uint8_t>(ms >> (8 * (5 - i)));
  for (int i = 0; i < 10; ++i) b[6 + i] = rand[i];
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

// `clamp`: an earlier millisecond than the last id's is raised to it (the
// system clock stepped back); without it such an id keeps its own time (a
// caller naming a historical time means it).
std::string MakeId(std::string_view prefix, int64_t wall_us, bool clamp) {
  uint64_t ms = static_cast<uint64_t>(wall_us < 0 ? 0 : wall_us / 1000) & ((uint64_t{1} << 48) - 1);
  std::array<uint8_t, 10> rand{};
  LastId& last = Last(/*system=*/clamp);
  std::lock_guard<std::mutex> lock(last.mu);
  if (last.valid && (ms == last.ms || (clamp && ms < last.ms))) {
    // Same millisecond: the last id's random part plus a random step in
    // [1, 2^32], so the next id sorts after it and still cannot be guessed
    // from it.
    uint8_t step_bytes[4];
    FillRandom(step_bytes, sizeof(step_bytes));
    uint64_t step = 1 + (uint64_t{step_bytes[0]} << 24 | uint64_t{step_bytes[1]} << 16 |
                         uint64_t{step_bytes[2]} << 8 | uint64_t{step_bytes[3]});
    ms = last.ms;
    rand = last.rand;
    if (AddBigEndian(rand, step)) {
      ++ms;  // 80 bits exhausted in one millisecond: borrow the next one
    }
  } else {
    FillRandom(rand.data(), rand.size());
  }
  last.ms = ms;
  last.rand = rand;
  last.valid = true;
  return Encode(prefix, ms, rand);
}
}  // namespace

std::string NewId(std::string_view prefix, int64_t wall_us) {
  return MakeId(prefix, wall_us, /*clamp=*/false);
}

std::string NewId(std::string_view prefix) {
  return MakeId(prefix, SystemClock::Get()->NowWallMicros(), /*clamp=*/true);
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

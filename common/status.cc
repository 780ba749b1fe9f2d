#include "common/status.h"

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"

namespace pkforge {

absl::Status Annotate(const absl::Status& s, std::string_view context) {
  if (s.ok()) return s;
  absl::Status out(s.code(), absl::StrCat(AsAbsl(context), ": ", s.message()));
  s.ForEachPayload(
      [&](absl::string_view url, const absl::Cord& payload) { out.SetPayload(url, payload); });
  return out;
}

absl::Status InvalidField(std::string_view field, std::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(AsAbsl(field), ": ", AsAbsl(why)));
}

absl::Status ErrnoError(std::string_view what, int err) {
  char buf[256];
  // GNU strerror_r returns a pointer that may or may not be `buf`.
  const char* text = strerror_r(err, buf, sizeof(buf));
  return absl::ErrnoToStatus(err, absl::StrCat(AsAbsl(what), ": ", text));
}

}  // namespace pkforge

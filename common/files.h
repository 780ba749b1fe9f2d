// Small file helpers shared by the daemons and the CLI (one copy each).
//
// Thread safety: free functions, safe from any thread.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace pkforge {

// The whole file as bytes. NOT_FOUND (naming the path and the system's
// reason) when it cannot be opened or read.
absl::StatusOr<std::string> ReadFileToString(const std::string& path);

}  // namespace pkforge

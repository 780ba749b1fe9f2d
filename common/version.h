// The one version string of every pkforge binary (`--version`): CMake's
// project version plus `git describe --always --dirty` of the source tree at
// configure time when it is a git checkout, e.g. "0.1.0 (5daa18f-dirty)".
//
// Thread safety: returns a constant.
#pragma once

#include <string>

namespace pkforge {

// "0.1.0" or "0.1.0 (git-describe)".
const std::string& VersionString();

}  // namespace pkforge

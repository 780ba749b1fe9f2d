#include "common/version.h"

#ifndef PKFORGE_PROJECT_VERSION
#define PKFORGE_PROJECT_VERSION "unknown"
#endif
#ifndef PKFORGE_GIT_DESCRIBE
#define PKFORGE_GIT_DESCRIBE ""
#endif

namespace pkforge {

const std::string& VersionString() {
  static const std::string* const kVersion = [] {
    std::string v = PKFORGE_PROJECT_VERSION;
    const std::string git = PKFORGE_GIT_DESCRIBE;
    if (!git.empty()) v += " (" + git + ")";
    return new std::string(v);
  }();
  return *kVersion;
}

}  // namespace pkforge

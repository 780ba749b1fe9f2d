#include "common/files.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace pkforge {

absl::StatusOr<std::string> ReadFileToString(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return absl::NotFoundError(absl::StrCat("cannot read ", path, ": read failed"));
  return ss.str();
}

RemoveTreeOnExit::~RemoveTreeOnExit() {
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

}  // namespace pkforge

// Small file helpers shared by the daemons and the CLI (one copy each).
//
// Thread safety: free functions, safe from any thread.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace pkforge {

// The whole file as bytes. NOT_FOUND (naming the path and the system's
// reason) when it cannot be opened or read.
absl::StatusOr<std::string> ReadFileToString(const std::string& path);

// The names of the entries of `dir` (without "." and ".."), sorted; empty
// when the directory does not exist or cannot be read. For kernel listings
// whose order means something, e.g. /proc/driver/nvidia/gpus (PCI address
// order: fixed-width lower-case hex names sort that way).
std::vector<std::string> ListDirSorted(const std::string& dir);

// Removes a folder and everything below it when it goes out of scope, errors
// ignored (a scratch folder whose run is over). std::filesystem::remove_all
// never follows symlinks, so a link left inside by a sandboxed process cannot
// lead the removal out of the folder.
class RemoveTreeOnExit {
 public:
  explicit RemoveTreeOnExit(std::string dir) : dir_(std::move(dir)) {}
  ~RemoveTreeOnExit();
  RemoveTreeOnExit(const RemoveTreeOnExit&) = delete;
  RemoveTreeOnExit& operator=(const RemoveTreeOnExit&) = delete;

 private:
  std::string dir_;
};

}  // namespace pkforge

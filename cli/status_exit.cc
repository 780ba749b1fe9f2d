#include <cstdio>

#include "cli/commands.h"

namespace pkforge::cli {

int ReportStatus(const std::string& command, const absl::Status& status) {
  if (status.ok()) return kExitOk;
  std::fflush(stdout);  // keep what the command already printed before the error
  std::fprintf(stderr, "pkforge %s: %s\n", command.c_str(), std::string(status.message()).c_str());
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
      return kExitUsage;
    case absl::StatusCode::kNotFound:
      return kExitNotFound;
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kUnimplemented:
    case absl::StatusCode::kDeadlineExceeded:
      return kExitUnavailable;
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kDataLoss:
    case absl::StatusCode::kUnknown:
      return kExitInternal;
    default:
      return kExitFailed;
  }
}

}  // namespace pkforge::cli

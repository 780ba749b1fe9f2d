// The `pkforge` command line: one Register*() per command family, each adding
// a CLI11 subcommand whose callback runs the command and records its exit code.
//
// Exit codes (documented in `pkforge --help` and the README):
//   0 success, 1 the command ran and reported a failure (e.g. a job failed),
//   2 bad usage or invalid input, 3 not found, 4 unavailable (server down or a
//   feature not built yet), 5 internal error.
//
// Thread safety: commands run on the main thread; nothing here is shared.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "absl/status/status.h"

namespace pkforge::cli {

enum ExitCode : int {
  kExitOk = 0,
  kExitFailed = 1,
  kExitUsage = 2,
  kExitNotFound = 3,
  kExitUnavailable = 4,
  kExitInternal = 5,
};

// Maps a status to the exit code above and prints "pkforge <cmd>: <message>".
int ReportStatus(const std::string& command, const absl::Status& status);

void RegisterLocal(CLI::App& app, int* exit_code);
void RegisterAnalysis(CLI::App& app, int* exit_code);  // jobs / trajectory / plateau on --db
void RegisterVersion(CLI::App& app, int* exit_code);
void RegisterLlm(CLI::App& app, int* exit_code);  // llm check
void RegisterEval(CLI::App& app, int* exit_code);  // eval FILE on an executor
void RegisterRemote(CLI::App& app, int* exit_code);  // submit/watch/show/cancel/problems/executors
void RegisterReport(CLI::App& app, int* exit_code);  // report JOB -o job.html (called by RegisterRemote)

}  // namespace pkforge::cli

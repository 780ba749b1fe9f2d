// pkforge: the command-line client. See cli/commands.h for exit codes.
#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "common/logging.h"
#include "common/version.h"

int main(int argc, char** argv) {
  CLI::App app{
      "pkforge: LLM agents that optimize multi-GPU kernels, evaluated honestly.\n"
      "Exit codes: 0 ok, 1 failed, 2 usage/invalid input, 3 not found, 4 unavailable, "
      "5 internal error."};
  app.set_version_flag("--version", "pkforge " + pkforge::VersionString());
  app.require_subcommand(1);
  int exit_code = pkforge::cli::kExitOk;
  pkforge::cli::RegisterLocal(app, &exit_code);
  pkforge::cli::RegisterAnalysis(app, &exit_code);
  pkforge::cli::RegisterVersion(app, &exit_code);
  pkforge::cli::RegisterLlm(app, &exit_code);
  pkforge::cli::RegisterEval(app, &exit_code);
  pkforge::cli::RegisterRemote(app, &exit_code);
  (void)pkforge::InitLogging({.level = "warn", .name = "pkforge"});
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : pkforge::cli::kExitUsage;
  }
  return exit_code;
}

#include <cstdio>

#include "cli/commands.h"
#include "storage/store.h"

#ifndef PKFORGE_VERSION
#define PKFORGE_VERSION "unknown"
#endif

namespace pkforge::cli {

void RegisterVersion(CLI::App& app, int* exit_code) {
  CLI::App* cmd = app.add_subcommand("version", "Print version information");
  cmd->callback([exit_code] {
    std::printf("pkforge %s (trajectory schema v%d)\n", PKFORGE_VERSION,
                storage::CurrentSchemaVersion());
    *exit_code = kExitOk;
  });
}

}  // namespace pkforge::cli

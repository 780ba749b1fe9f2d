#include <cstdio>

#include "cli/commands.h"
#include "common/version.h"
#include "storage/store.h"


namespace pkforge::cli {

void RegisterVersion(CLI::App& app, int* exit_code) {
  CLI::App* cmd = app.add_subcommand("version", "Print version information");
  cmd->callback([exit_code] {
    std::printf("pkforge %s (trajectory schema v%d)\n", VersionString().c_str(),
                storage::CurrentSchemaVersion());
    *exit_code = kExitOk;
  });
}

}  // namespace pkforge::cli

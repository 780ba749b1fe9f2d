// The internal `rank` subcommand's flags, shared by pkforge-worker (host
// ranks) and pkforge-cuda-rank (cuda ranks) so the judge can start either with
// the same command line. Header-only: both binaries link CLI11, the kernels
// library does not.
#pragma once

#include <CLI/CLI.hpp>

#include "kernels/harness/rank.h"

namespace pkforge::kernels {

inline void AddRankFlags(CLI::App* cmd, RankOptions* o) {
  cmd->add_option("--role", o->role)->required();
  cmd->add_option("--rank", o->rank)->required();
  cmd->add_option("--world-size", o->world)->required();
  cmd->add_option("--problem", o->problem)->required();
  cmd->add_option("--dtype", o->dtype)->required();
  cmd->add_option("--dims", o->dims)->required();
  cmd->add_option("--slots", o->slots)->required();
  cmd->add_option("--scratch-bytes", o->scratch_bytes)->required();
  cmd->add_option("--flag-count", o->flag_count)->required();
  cmd->add_option("--candidate", o->candidate);
  cmd->add_option("--writable", o->writable);
  cmd->add_option("--watcher-cpu", o->watcher_cpu);
}

}  // namespace pkforge::kernels

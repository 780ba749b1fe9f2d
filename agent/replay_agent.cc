// The replay agent: evaluates the files of a directory in sorted order (for
// re-evaluating an old run on new hardware, and for tests).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "agent/job_context.h"
#include "agent/reply_parser.h"
#include "common/status.h"
#include "fmt/format.h"

namespace pkforge::agent::internal {
namespace {

namespace fs = std::filesystem;

class ReplayAgent final : public Agent {
 public:
  ReplayAgent(AgentEnv env, AgentOptions options) : ctx_(env, options) {}

  absl::StatusOr<AgentResult> Run() override {
    const std::string& dir = ctx_.spec().agent().replay_dir();
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      return absl::NotFoundError(AsAbsl(fmt::format("replay_dir {} is not a directory", dir)));
    }
    std::vector<fs::path> files;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (name.empty() || name[0] == '.') continue;  // editor and VCS droppings
      if (it->is_regular_file(ec)) files.push_back(it->path());
    }
    if (ec) return absl::UnavailableError(AsAbsl(fmt::format("listing {}: {}", dir, ec.message())));
    std::sort(files.begin(), files.end(),
              [](const fs::path& a, const fs::path& b) { return a.filename() < b.filename(); });

    const auto& opts = ctx_.options();
    const int n = ctx_.spec().agent().strategy().n();
    const int parallel = std::max(1, opts.parallel_evaluations > 0 ? opts.parallel_evaluations : n);
    size_t next = 0;
    while (next < files.size()) {
      if (auto stop = ctx_.CheckStop(/*starting_turn=*/true)) return ctx_.Finish(*stop);
      const int k = static_cast<int>(
          std::min<size_t>({static_cast<size_t>(parallel), files.size() - next,
                            static_cast<size_t>(std::max(1, ctx_.RemainingEvaluations()))}));
      std::string note =
          k == 1 ? fmt::format("replay {}", files[next].filename().string())
                 : fmt::format("replay {} files from {}", k, files[next].filename().string());
      ASSIGN_OR_RETURN(TurnInfo turn, ctx_.BeginTurn(note));
      std::vector<absl::Status> fatal(k);
      RunConcurrently(k, [&](int i) { fatal[i] = EvaluateFile(turn.id, files[next + i]); });
      for (const auto& s : fatal) RETURN_IF_ERROR(s);
      next += k;
    }
    return ctx_.Finish(StopReason::kExhausted);
  }

 private:
  absl::Status EvaluateFile(const std::string& turn_id, const fs::path& path) {
    if (!ctx_.TryReserveEvaluation()) return absl::OkStatus();
    std::ifstream in(path, std::ios::binary);
    std::stringstream buf;
    buf << in.rdbuf();
    if (!in.good() && !in.eof()) {
      ctx_.ReleaseEvaluation();
      return ctx_.Log(turn_id, "warn", fmt::format("cannot read {}: skipped", path.string()));
    }
    const std::string source = buf.str();
    if (source.size() > kMaxCandidateBytes) {
      ctx_.ReleaseEvaluation();
      return ctx_.Log(turn_id, "warn",
                      fmt::format("{} is {} bytes, over the {} byte limit: skipped", path.string(),
                                  source.size(), kMaxCandidateBytes));
    }
    ASSIGN_OR_RETURN(Evaluated ev,
                     ctx_.Evaluate(turn_id, source, "replay:" + path.filename().string(), "", ""));
    if (ev.error.ok()) {
      ctx_.Success(JobContext::Kind::kEvaluation);
      return absl::OkStatus();
    }
    if (ctx_.token().IsCancelled()) return absl::OkStatus();  // the loop reports why it stopped
    RETURN_IF_ERROR(ctx_.Failure(JobContext::Kind::kEvaluation, ev.error));
    return ctx_.Log(turn_id, "warn", "evaluation without result: " + ev.error.ToString());
  }

  JobContext ctx_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Agent>> MakeReplayAgent(AgentEnv env, AgentOptions options) {
  return std::unique_ptr<Agent>(new ReplayAgent(std::move(env), std::move(options)));
}

}  // namespace pkforge::agent::internal

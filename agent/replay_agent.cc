// The replay agent: evaluates candidates in order: the sources sent in the
// job spec (replay_sources), or the regular files of a directory the
// orchestrator resolved under its operator's replay root (sorted by name;
// opened relative to the directory without following symbolic links, so a
// link inside cannot lead to a file elsewhere on the host).
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

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

// Opens `dir` for reading as a directory inside `root` (see
// AgentOptions::replay_root): `dir` is relative to the root or an absolute
// path under its real path; every component below the root is opened with
// O_NOFOLLOW relative to its parent, so neither `..` nor a symbolic link
// (also one swapped in after the orchestrator admitted the job) leads out.
absl::StatusOr<int> OpenUnderRoot(const std::string& root, const std::string& dir) {
  if (root.empty()) {
    return absl::PermissionDeniedError(
        "agent.replay_dir: this orchestrator reads no replay files (it has no replay root); "
        "send the candidates in agent.replay_sources");
  }
  char real_root[PATH_MAX];
  if (realpath(root.c_str(), real_root) == nullptr) {
    return absl::FailedPreconditionError("the orchestrator's replay root does not exist");
  }
  const std::string r = real_root;
  std::string rel;
  if (!dir.empty() && dir[0] == '/') {
    if (dir == r) {
      rel = "";
    } else if (dir.compare(0, r.size() + 1, r + "/") == 0) {
      rel = dir.substr(r.size() + 1);
    } else {
      return absl::PermissionDeniedError("agent.replay_dir: outside the replay root");
    }
  } else {
    rel = dir;
  }
  int fd = open(real_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return absl::FailedPreconditionError("the orchestrator's replay root cannot be opened");
  size_t at = 0;
  while (at <= rel.size()) {
    size_t slash = rel.find('/', at);
    if (slash == std::string::npos) slash = rel.size();
    const std::string part = rel.substr(at, slash - at);
    at = slash + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      close(fd);
      return absl::PermissionDeniedError("agent.replay_dir: '..' is not allowed");
    }
    const int next = openat(fd, part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    const int err = errno;
    close(fd);
    if (next < 0) {
      return err == ELOOP || err == ENOTDIR
                 ? absl::PermissionDeniedError(
                       "agent.replay_dir: a symbolic link or a non-directory on the path")
                 : absl::NotFoundError("agent.replay_dir: no such directory under the replay root");
    }
    fd = next;
  }
  return fd;
}

class ReplayAgent final : public Agent {
 public:
  ReplayAgent(AgentEnv env, AgentOptions options) : ctx_(env, options) {}

  absl::StatusOr<AgentResult> Run() override {
    const auto& a = ctx_.spec().agent();
    std::vector<Item> files;
    if (!a.replay_sources().empty()) {
      for (const auto& src : a.replay_sources())
        files.push_back(Item{src.name().empty() ? fmt::format("source {}", files.size()) : src.name(),
                             src.source(), true});
    } else {
      const std::string& dir = a.replay_dir();
      ASSIGN_OR_RETURN(dir_fd_, OpenUnderRoot(ctx_.options().replay_root, dir));
      const int list_fd = dup(dir_fd_);
      DIR* d = list_fd >= 0 ? fdopendir(list_fd) : nullptr;
      if (d == nullptr) {
        if (list_fd >= 0) close(list_fd);
        return absl::UnavailableError(AsAbsl(fmt::format("listing {} failed", dir)));
      }
      while (dirent* e = readdir(d)) {
        const std::string name = e->d_name;
        if (name.empty() || name[0] == '.') continue;  // editor and VCS droppings
        struct stat st;
        // lstat semantics: a symbolic link is skipped, never followed.
        if (fstatat(dir_fd_, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
          files.push_back(Item{name, "", false});
        if (files.size() > ctx_.options().replay_max_files) {
          closedir(d);
          return absl::ResourceExhaustedError(
              AsAbsl(fmt::format("replay_dir holds more than {} files",
                                 ctx_.options().replay_max_files)));
        }
      }
      closedir(d);
      std::sort(files.begin(), files.end(),
                [](const Item& x, const Item& y) { return x.name < y.name; });
    }
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
          k == 1 ? fmt::format("replay {}", files[next].name)
                 : fmt::format("replay {} files from {}", k, files[next].name);
      ASSIGN_OR_RETURN(TurnInfo turn, ctx_.BeginTurn(note));
      std::vector<absl::Status> fatal(k);
      RunConcurrently(k, [&](int i) { fatal[i] = EvaluateFile(turn.id, files[next + i]); });
      for (const auto& s : fatal) RETURN_IF_ERROR(s);
      next += k;
    }
    return ctx_.Finish(StopReason::kExhausted);
  }

 private:
  struct Item {
    std::string name;
    std::string source;  // inline sources
    bool inline_source = false;
  };

  // The file's bytes, opened relative to the resolved directory with
  // O_NOFOLLOW (a link swapped in after listing is refused, not followed).
  absl::StatusOr<std::string> Read(const std::string& name) const {
    const int fd = openat(dir_fd_, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return absl::NotFoundError(AsAbsl(fmt::format("cannot open {}", name)));
    struct stat st;
    std::string out;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      close(fd);
      return absl::FailedPreconditionError(AsAbsl(fmt::format("{} is not a regular file", name)));
    }
    char buf[65536];
    for (;;) {
      const ssize_t n = read(fd, buf, sizeof buf);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
      if (out.size() > kMaxCandidateBytes) break;
    }
    close(fd);
    return out;
  }

  absl::Status EvaluateFile(const std::string& turn_id, const Item& item) {
    if (!ctx_.TryReserveEvaluation()) return absl::OkStatus();
    std::string source = item.source;
    if (!item.inline_source) {
      absl::StatusOr<std::string> read = Read(item.name);
      if (!read.ok()) {
        ctx_.ReleaseEvaluation();
        return ctx_.Log(turn_id, "warn",
                        fmt::format("cannot read {}: skipped ({})", item.name,
                                    AsStd(read.status().message())));
      }
      source = std::move(*read);
    }
    if (source.size() > kMaxCandidateBytes) {
      ctx_.ReleaseEvaluation();
      return ctx_.Log(turn_id, "warn",
                      fmt::format("{} is over the {} byte limit: skipped", item.name,
                                  kMaxCandidateBytes));
    }
    ASSIGN_OR_RETURN(Evaluated ev,
                     ctx_.Evaluate(turn_id, source, "replay:" + item.name, "", ""));
    if (ev.error.ok()) {
      ctx_.Success(JobContext::Kind::kEvaluation);
      return absl::OkStatus();
    }
    if (ctx_.token().IsCancelled()) return absl::OkStatus();  // the loop reports why it stopped
    RETURN_IF_ERROR(ctx_.Failure(JobContext::Kind::kEvaluation, ev.error));
    return ctx_.Log(turn_id, "warn", "evaluation without result: " + ev.error.ToString());
  }

  JobContext ctx_;
  int dir_fd_ = -1;

 public:
  ~ReplayAgent() override {
    if (dir_fd_ >= 0) close(dir_fd_);
  }
};

}  // namespace

absl::StatusOr<std::unique_ptr<Agent>> MakeReplayAgent(AgentEnv env, AgentOptions options) {
  return std::unique_ptr<Agent>(new ReplayAgent(std::move(env), std::move(options)));
}

}  // namespace pkforge::agent::internal

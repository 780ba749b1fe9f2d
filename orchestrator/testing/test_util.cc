#include "orchestrator/testing/test_util.h"
#include <sstream>
#include <algorithm>

#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "fmt/format.h"
#include "orchestrator/convert.h"

namespace pkforge::orchestrator::testing {

std::string MakeTempDir(const std::string& prefix) {
  std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + ".XXXXXX")).string();
  if (mkdtemp(tmpl.data()) == nullptr) return "";
  return tmpl;
}

v1::JobSpec SearchSpec(int max_evaluations, double wall_s) {
  v1::JobSpec s;
  s.set_problem("allreduce");
  s.set_backend(v1::BACKEND_HOST);
  s.set_world_size(2);
  s.set_dtype(v1::DTYPE_F32);
  s.mutable_size()->set_preset("tiny");
  s.mutable_agent()->set_kind(v1::AGENT_KIND_SEARCH);
  s.mutable_budget()->set_wall_seconds(wall_s);
  s.mutable_budget()->set_max_evaluations(max_evaluations);
  s.set_seed(7);
  s.set_label("test");
  return s;
}

v1::JobSpec ReplaySpec(const std::string& dir, double wall_s) {
  v1::JobSpec s = SearchSpec(0, wall_s);
  s.mutable_budget()->set_max_evaluations(0);
  s.mutable_agent()->set_kind(v1::AGENT_KIND_REPLAY);
  // The client reads its files and sends them (the orchestrator reads no
  // files for clients without a replay root).
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file(ec)) files.push_back(it->path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::stringstream buf;
    buf << in.rdbuf();
    auto* src = s.mutable_agent()->add_replay_sources();
    src->set_name(f.filename().string());
    src->set_source(buf.str());
  }
  if (files.empty()) s.mutable_agent()->set_replay_dir(dir);  // refused: no replay root
  return s;
}

v1::JobSpec LlmSpec(const std::string& provider_name, int max_turns) {
  v1::JobSpec s = SearchSpec(0, 60);
  s.mutable_budget()->set_max_evaluations(0);
  s.mutable_budget()->set_max_turns(max_turns);
  auto* a = s.mutable_agent();
  a->set_kind(v1::AGENT_KIND_LLM);
  a->mutable_llm()->set_provider_name(provider_name);
  a->mutable_llm()->set_model("gpt-4o");
  a->mutable_strategy()->set_kind(v1::STRATEGY_SEQUENTIAL);
  return s;
}

std::unique_ptr<v1::Orchestrator::Stub> Client(const std::string& address) {
  return v1::Orchestrator::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
}

absl::StatusOr<v1::Job> WaitForEnd(v1::Orchestrator::Stub* stub, const std::string& job_id,
                                   double timeout_s, const std::string& token) {
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  v1::Job job;
  while (std::chrono::steady_clock::now() < until) {
    grpc::ClientContext ctx;
    if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
    v1::GetJobRequest req;
    req.set_job_id(job_id);
    grpc::Status s = stub->GetJob(&ctx, req, &job);
    if (s.ok() && IsTerminal(job.state())) return job;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return absl::DeadlineExceededError(
      fmt::format("job {} still {} after {} s", job_id, ProtoStateName(job.state()), timeout_s));
}

WatchResult Watch(v1::Orchestrator::Stub* stub, const std::string& job_id, int64_t after_seq,
                  bool no_follow, int max_events, const std::string& token) {
  WatchResult out;
  grpc::ClientContext ctx;
  if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
  v1::WatchJobRequest req;
  req.set_job_id(job_id);
  req.set_after_seq(after_seq);
  req.set_no_follow(no_follow);
  auto reader = stub->WatchJob(&ctx, req);
  v1::WatchJobResponse resp;
  while (reader->Read(&resp)) {
    if (resp.has_heartbeat()) {
      ++out.heartbeats;
      continue;
    }
    out.events.push_back(resp.event());
    if (static_cast<int>(out.events.size()) >= max_events) {
      ctx.TryCancel();
      break;
    }
  }
  out.status = reader->Finish();
  return out;
}

absl::StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Start(std::vector<std::string> argv,
                                                                  double timeout_s,
                                                                  const std::string& log_file) {
  int fds[2];
  if (pipe(fds) != 0) return absl::InternalError("pipe");
  pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork");
  if (pid == 0) {
    dup2(fds[1], 1);
    if (!log_file.empty()) {
      int fd = open(log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) dup2(fd, 2);
    }
    close(fds[0]);
    close(fds[1]);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(fds[1]);
  std::unique_ptr<ChildProcess> c(new ChildProcess());
  c->pid_ = pid;
  std::string buf;
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  while (std::chrono::steady_clock::now() < until) {
    pollfd p{fds[0], POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    char tmp[512];
    ssize_t n = read(fds[0], tmp, sizeof(tmp));
    if (n <= 0) break;
    buf.append(tmp, static_cast<size_t>(n));
    auto pos = buf.find("LISTENING ");
    if (pos != std::string::npos) {
      auto end = buf.find('\n', pos);
      if (end != std::string::npos) {
        c->address_ = buf.substr(pos + 10, end - pos - 10);
        break;
      }
    }
  }
  close(fds[0]);  // the child's later stdout writes are not needed (SIGPIPE ignored there)
  if (c->address_.empty()) {
    return absl::UnavailableError(fmt::format("{} did not print LISTENING (output: {})", argv[0], buf));
  }
  return c;
}

void ChildProcess::Kill(int sig) {
  if (pid_ > 0 && !reaped_) kill(pid_, sig);
}

int ChildProcess::Wait() {
  if (!reaped_ && pid_ > 0) {
    waitpid(pid_, &status_, 0);
    reaped_ = true;
  }
  return status_;
}

ChildProcess::~ChildProcess() {
  if (!reaped_) {
    Kill(SIGKILL);
    Wait();
  }
}

int64_t RssKb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atoll(line.c_str() + 6);
  }
  return -1;
}

}  // namespace pkforge::orchestrator::testing

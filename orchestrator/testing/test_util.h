// Helpers shared by the orchestrator tests and benchmark: temp dirs, job
// specs, a client, waiting for a job, collecting a WatchJob stream, and
// child processes that print "LISTENING <addr>".
//
// Threading: plain helpers; each object is used by one thread.
#pragma once

#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "pkforge/v1/orchestrator.grpc.pb.h"

namespace pkforge::orchestrator::testing {

std::string MakeTempDir(const std::string& prefix);

v1::JobSpec SearchSpec(int max_evaluations = 8, double wall_s = 60);
v1::JobSpec ReplaySpec(const std::string& dir, double wall_s = 60);
// An llm job on the orchestrator's provider `provider_name` (configure it
// with WithProvider / --provider).
v1::JobSpec LlmSpec(const std::string& provider_name, int max_turns = 3);

std::unique_ptr<v1::Orchestrator::Stub> Client(const std::string& address);

// GetJob until the job is terminal or `timeout_s` passes.
absl::StatusOr<v1::Job> WaitForEnd(v1::Orchestrator::Stub* stub, const std::string& job_id,
                                   double timeout_s, const std::string& token = "");

struct WatchResult {
  std::vector<v1::Event> events;
  int heartbeats = 0;
  grpc::Status status;
};
// Reads a whole WatchJob stream; stops early (cancelling) after `max_events`.
WatchResult Watch(v1::Orchestrator::Stub* stub, const std::string& job_id, int64_t after_seq,
                  bool no_follow = false, int max_events = 1 << 30, const std::string& token = "");

// A child process started with argv; its stdout is read until a line
// "LISTENING <address>" (or `timeout_s`).
class ChildProcess {
 public:
  static absl::StatusOr<std::unique_ptr<ChildProcess>> Start(std::vector<std::string> argv,
                                                             double timeout_s = 20,
                                                             const std::string& log_file = "");
  ~ChildProcess();  // SIGKILL + reap if still running
  pid_t pid() const { return pid_; }
  const std::string& address() const { return address_; }
  void Kill(int sig = SIGKILL);
  int Wait();  // exit status as from waitpid

 private:
  pid_t pid_ = -1;
  std::string address_;
  bool reaped_ = false;
  int status_ = 0;
};

int64_t RssKb();  // VmRSS of this process

}  // namespace pkforge::orchestrator::testing

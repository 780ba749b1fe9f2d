// JobSink: the agent::TrajectorySink of one job attempt, writing every entry
// to the trajectory database (storage::TrajectoryStore) and appending the
// matching event to the job's EventLog, which streams it to watchers.
//
// Contract
// - Each entry's rows and its event are one write (EventLog::Append with
//   storage::StepRows): committed together in one transaction, which the
//   store group-commits with other jobs' writes, so a step costs a share of
//   one fsync. OK is returned only after that commit (fsynced); any store
//   error is returned as is and stops the job (the agent never continues
//   with an unrecorded trajectory), and a failed step leaves no rows.
// - Rows: turns, llm_calls, candidates (deduplicated by sha256), evaluations
//   (only those with an executor result; one without a result -- cancelled,
//   or no executor could run it -- appears only as an evaluation_finished
//   event whose status is unspecified and whose message says why).
// - A resumed job (a second attempt after an orchestrator restart) continues
//   the same trajectory: `Offsets` shift turn indexes past the turns already
//   stored and elapsed times past the time the job already ran, so turn
//   indexes stay unique and best-so-far curves stay monotone in time.
// - Candidates have no event of their own in the v1 API; their lineage
//   (origin, parent, producing LLM call) is recorded as a log event.
// - best_improved events strictly improve on the job's best so far (kept in
//   JobProgress, seeded from the store when a job resumes): an agent's
//   improvement that another evaluation of the job already beat, or that
//   does not beat an earlier attempt's best, is not recorded.
// - Progress (turns, evaluations, tokens, best, last status) is kept in a
//   JobProgress that GetJob/ListJobs read while the job runs.
//
// Threading: the agent serialises calls for one job (trajectory_sink.h), so
// the sink itself needs no lock; JobProgress is locked for its readers.
#pragma once

#include <mutex>
#include <optional>
#include <string>

#include "agent/trajectory_sink.h"
#include "orchestrator/event_log.h"
#include "orchestrator/metrics.h"
#include "storage/store.h"

namespace pkforge::orchestrator {

struct ProgressSnapshot {
  int32_t turns = 0;
  int32_t evaluations = 0;  // with a result
  int64_t tokens = 0;
  double cost_usd = 0;
  std::optional<double> best_speedup;
  std::string best_evaluation_id;
  std::string best_candidate_sha256;
  double best_roofline_fraction = 0;
  v1::EvaluationResult::Status last_status = v1::EvaluationResult::STATUS_UNSPECIFIED;
  int64_t last_elapsed_ms = 0;
  // Evaluations the executor refused (INVALID_ARGUMENT / FAILED_PRECONDITION:
  // it will never run this configuration) and the first refusal's message.
  int32_t refused = 0;
  std::string first_refusal;
  // Search evaluations at other settings than the job's (not comparable).
  int32_t other_settings_evaluations = 0;
  std::optional<double> other_settings_best_speedup;
  // The final fresh re-measurement (an entry with final_measurement set).
  std::optional<double> final_speedup;
  std::string final_evaluation_id;
  v1::EvaluationResult::Status final_status = v1::EvaluationResult::STATUS_UNSPECIFIED;
  double final_roofline_fraction = 0;
  std::string final_candidate_sha256;
};

class JobProgress {
 public:
  ProgressSnapshot Get() const {
    std::lock_guard lock(mu_);
    return s_;
  }
  template <typename Fn>
  void Update(Fn&& fn) {
    std::lock_guard lock(mu_);
    fn(s_);
  }

 private:
  mutable std::mutex mu_;
  ProgressSnapshot s_;
};

class JobSink final : public agent::TrajectorySink {
 public:
  struct Offsets {
    int32_t turn_index = 0;  // turns stored by earlier attempts
    int64_t elapsed_ms = 0;  // time earlier attempts ran
  };

  JobSink(std::string job_id, std::string backend, Offsets offsets, EventLog* log,
          JobProgress* progress, Metrics* metrics);

  absl::Status OnTurnStarted(const agent::TurnEntry& e) override;
  absl::Status OnLlmCall(const agent::LlmCallEntry& e) override;
  absl::Status OnCandidate(const agent::CandidateEntry& e) override;
  absl::Status OnEvaluationStarted(const agent::EvaluationStartEntry& e) override;
  absl::Status OnEvaluationFinished(const agent::EvaluationEntry& e) override;
  absl::Status OnBestImproved(const agent::BestImprovedEntry& e) override;
  absl::Status OnLog(const agent::LogEntry& e) override;

 private:
  v1::Event NewEvent(int64_t wall_us, int64_t elapsed_ms) const;
  // Commits `event` with the entry's `rows` and records progress.
  absl::Status Append(v1::Event event, const storage::StepRows& rows = {});

  const std::string job_id_;
  const std::string backend_;
  const Offsets offsets_;
  EventLog* log_;
  JobProgress* progress_;
  Metrics* metrics_;
  // The latest evaluation with a result: a best improvement follows the
  // evaluation that caused it, and takes its roofline fraction from here.
  std::string last_evaluation_id_;
  double last_roofline_fraction_ = 0;
};

}  // namespace pkforge::orchestrator

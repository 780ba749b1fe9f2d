// TrajectorySink: where an agent loop hands every step of a job -- turns, LLM
// calls, candidates, evaluations, improvements of the best, notes -- so the
// orchestrator can persist them (SQLite store, design section 9) and stream
// them to watchers. The agent module defines the entries; it does not know
// how they are stored.
//
// Contract
// - Every entry carries the job id, the wall time (Unix micros) when it
//   happened and the elapsed milliseconds since the job started on the
//   agent's Clock. Evaluations also carry the executor's queue time
//   separately (queue_ms), so elapsed and "active" time can both be analysed.
// - Order is causal: a turn is reported before anything of that turn; a
//   candidate before its evaluation starts; an evaluation's start before its
//   end; a best improvement right after the evaluation that caused it.
// - An OK return means the entry is durable (the orchestrator persists before
//   acknowledging). A non-OK return stops the job: the agent returns that
//   status from Run() rather than continuing with an unrecorded trajectory.
// - Secrets never appear in entries: prompts are the messages (never HTTP
//   headers) and every text that came from a provider or an error is passed
//   through pkforge::RedactSecrets() first.
//
// Threading: for one job the agent serialises calls (never two at once), so a
// per-job sink needs no locking; one sink shared by many jobs is called
// concurrently from the jobs' threads and must be thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "pkforge/v1/common.pb.h"

namespace pkforge::agent {

struct TurnEntry {
  std::string job_id;
  std::string turn_id;  // NewId("turn")
  int32_t index = 0;    // 0-based within the job
  std::string note;     // what the strategy does in this turn, e.g. "best_of_n: 4 candidates"
  int64_t wall_us = 0;
  int64_t elapsed_ms = 0;
};

struct LlmCallEntry {
  std::string job_id;
  std::string call_id;  // NewId("llm")
  std::string turn_id;
  std::string provider;  // "openai" | "anthropic"
  std::string model;
  std::string prompt;  // the request messages as a JSON array [{"role","content"}]
  std::string reply;   // the reply text ("" on error)
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  double latency_ms = 0;  // whole call, retries and backoff included
  double cost_usd = 0;
  int32_t attempts = 0;  // HTTP attempts, retries included
  std::string error;     // "" on success
  std::string note;      // e.g. "no price for model x: cost recorded as 0"
  int64_t started_elapsed_ms = 0;
  int64_t wall_us = 0;  // when the call finished
  int64_t elapsed_ms = 0;
};

struct CandidateEntry {
  std::string job_id;
  std::string turn_id;
  std::string sha256;  // of source
  std::string source;
  std::string backend;        // "cuda" | "host"
  std::string origin;         // "llm:file" | "llm:edits" | "search:<params>" | "replay:<file>"
  std::string parent_sha256;  // the candidate it was derived from, "" when none
  std::string llm_call_id;    // the call that produced it, "" for non-LLM agents
  int64_t wall_us = 0;
  int64_t elapsed_ms = 0;
};

struct EvaluationStartEntry {
  std::string job_id;
  std::string turn_id;
  std::string evaluation_id;  // NewId("eval"), assigned by the agent
  std::string candidate_sha256;
  int64_t wall_us = 0;
  int64_t elapsed_ms = 0;
};

struct EvaluationEntry {
  std::string job_id;
  std::string turn_id;
  std::string evaluation_id;
  std::string candidate_sha256;
  // OK: `result` holds the executor's result. Otherwise there is no result:
  // CANCELLED / DEADLINE_EXCEEDED (job stopped while it ran) or an
  // infrastructure error; `result` is empty then.
  absl::Status error;
  v1::EvaluationResult result;
  std::string executor;
  double queue_ms = 0;  // dispatcher + executor queue time (excluded from "active" time)
  double compile_ms = 0;
  double run_ms = 0;
  int64_t started_wall_us = 0;
  int64_t started_elapsed_ms = 0;
  int64_t wall_us = 0;  // when the result arrived
  int64_t elapsed_ms = 0;
  // The settings it was requested with (0 = the executor's default), and
  // whether they were the job's own (JobSpec.eval): a successive-halving rung
  // timed with other iteration counts is not comparable and never makes the
  // job's best.
  int32_t timed_iters = 0;
  int32_t trials = 0;
  bool comparable = true;
  // The final fresh re-measurement of the chosen candidate at the job's end
  // (written by the orchestrator, not by an agent).
  bool final_measurement = false;
};

struct BestImprovedEntry {
  std::string job_id;
  std::string evaluation_id;
  std::string candidate_sha256;
  double speedup = 0;
  double previous = 0;  // 0 when this is the first correct candidate
  int64_t wall_us = 0;
  int64_t elapsed_ms = 0;
};

struct LogEntry {
  std::string job_id;
  std::string turn_id;  // may be empty
  std::string level;    // "info" | "warn" | "error"
  std::string text;
  int64_t wall_us = 0;
  int64_t elapsed_ms = 0;
};

class TrajectorySink {
 public:
  virtual ~TrajectorySink() = default;
  virtual absl::Status OnTurnStarted(const TurnEntry& entry) = 0;
  virtual absl::Status OnLlmCall(const LlmCallEntry& entry) = 0;
  virtual absl::Status OnCandidate(const CandidateEntry& entry) = 0;
  virtual absl::Status OnEvaluationStarted(const EvaluationStartEntry& entry) = 0;
  virtual absl::Status OnEvaluationFinished(const EvaluationEntry& entry) = 0;
  virtual absl::Status OnBestImproved(const BestImprovedEntry& entry) = 0;
  virtual absl::Status OnLog(const LogEntry& entry) = 0;
};

}  // namespace pkforge::agent

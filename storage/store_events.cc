// SqliteTrajectoryStore's events (the append-only log a job's watchers
// stream) and per-job summaries (store_impl.h).
#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "fmt/format.h"
#include "storage/migrations.h"
#include "storage/sqlite_util.h"
#include "storage/store_impl.h"

namespace pkforge::storage::store_internal {

// ------------------------------------------------------------------- events

absl::StatusOr<int64_t> SqliteTrajectoryStore::AppendEvent(const EventRecord& event) {
  return AppendStep("AppendEvent", StepRows{}, event);
}

absl::StatusOr<int64_t> SqliteTrajectoryStore::AppendEventWith(const StepRows& rows,
                                                               const EventRecord& event) {
  return AppendStep("AppendEventWith", rows, event);
}

absl::StatusOr<int64_t> SqliteTrajectoryStore::AppendStep(const char* what, const StepRows& rows,
                                                          const EventRecord& event) {
  // Every field check happens here, before queueing, so a malformed step
  // fails alone and cheaply instead of inside somebody else's batch.
  RETURN_IF_ERROR(Annotate(ValidateEvent(event), what));
  auto same_job = [&](const char* row, const std::string& job_id) -> absl::Status {
    if (job_id == event.job_id) return absl::OkStatus();
    return Invalid(fmt::format("{}.job_id", row),
                   fmt::format("is {} but the event's job is {}", job_id, event.job_id));
  };
  if (rows.turn != nullptr) {
    RETURN_IF_ERROR(Annotate(ValidateTurn(*rows.turn), fmt::format("{}: turn", what)));
    RETURN_IF_ERROR(Annotate(same_job("turn", rows.turn->job_id), what));
  }
  if (rows.llm_call != nullptr) {
    RETURN_IF_ERROR(Annotate(ValidateLlmCall(*rows.llm_call), fmt::format("{}: llm_call", what)));
    RETURN_IF_ERROR(Annotate(same_job("llm_call", rows.llm_call->job_id), what));
  }
  if (rows.candidate != nullptr) {
    RETURN_IF_ERROR(
        Annotate(ValidateCandidate(*rows.candidate), fmt::format("{}: candidate", what)));
  }
  if (rows.evaluation != nullptr) {
    RETURN_IF_ERROR(
        Annotate(ValidateEvaluation(*rows.evaluation), fmt::format("{}: evaluation", what)));
    RETURN_IF_ERROR(Annotate(same_job("evaluation", rows.evaluation->job_id), what));
  }
  if (rows.job_state != nullptr) {
    RETURN_IF_ERROR(Annotate(RequireNonNegative("job_state.wall_us", rows.job_state->wall_us),
                             what));
  }
  // "0 = now" is resolved once, before queueing, so every row of the step
  // that leaves its time at 0 gets the same time.
  const int64_t now = options_.clock->NowWallMicros();
  auto wall = [now](int64_t w) { return w != 0 ? w : now; };
  const bool event_only = rows.turn == nullptr && rows.llm_call == nullptr &&
                          rows.candidate == nullptr && rows.evaluation == nullptr &&
                          rows.job_state == nullptr;
  int64_t seq = 0;
  absl::Status s =
      Write(what, event_only ? WriteShape::kOneStatement : WriteShape::kMultiStatement,
            [&](BatchTxn& txn) -> absl::Status {
              Connection& conn = txn.conn();
              if (rows.turn != nullptr) {
                RETURN_IF_ERROR(Annotate(
                    InsertTurn(conn, *rows.turn, wall(rows.turn->started_wall_us)), "turn"));
              }
              if (rows.candidate != nullptr) {
                bool inserted = false;
                RETURN_IF_ERROR(
                    Annotate(InsertCandidate(conn, *rows.candidate,
                                             wall(rows.candidate->first_seen_wall_us), &inserted),
                             "candidate"));
              }
              if (rows.llm_call != nullptr) {
                RETURN_IF_ERROR(Annotate(
                    InsertLlmCall(conn, *rows.llm_call, wall(rows.llm_call->wall_us)), "llm_call"));
              }
              if (rows.evaluation != nullptr) {
                RETURN_IF_ERROR(Annotate(
                    InsertEvaluation(conn, *rows.evaluation, wall(rows.evaluation->wall_us)),
                    "evaluation"));
              }
              ASSIGN_OR_RETURN(seq, txn.InsertEvent(event, wall(event.wall_us)));
              if (rows.job_state != nullptr) {
                RETURN_IF_ERROR(Annotate(
                    WriteJobState(conn, event.job_id, rows.job_state->state,
                                  rows.job_state->error, wall(rows.job_state->wall_us)),
                    "job state"));
              }
              return absl::OkStatus();
            });
  RETURN_IF_ERROR(s);
  return seq;
}

absl::StatusOr<std::vector<EventRecord>> SqliteTrajectoryStore::ReadEvents(std::string_view job_id,
                                                                           int64_t after_seq,
                                                                           int32_t limit) {
  RETURN_IF_ERROR(Annotate(RequireId("job_id", job_id, "job"), "ReadEvents"));
  RETURN_IF_ERROR(Annotate(RequireNonNegative("after_seq", after_seq), "ReadEvents"));
  if (limit < 1 || limit > kMaxListLimit) {
    return absl::InvalidArgumentError(
        fmt::format("ReadEvents: limit must be in 1..{}, got {}", kMaxListLimit, limit));
  }
  ReadPool::Lease conn = readers_.Acquire();
  RETURN_IF_ERROR(Annotate(RequireJobExists(*conn, job_id), "ReadEvents"));
  ASSIGN_OR_RETURN(Statement st,
                   (*conn).Prepare("SELECT job_id, seq, wall_us, elapsed_ms, type, payload_json "
                                   "FROM events WHERE job_id = ?1 AND seq > ?2 "
                                   "ORDER BY seq LIMIT ?3"));
  st.Bind(1, job_id).Bind(2, after_seq).Bind(3, limit);
  std::vector<EventRecord> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    EventRecord e;
    e.job_id = st.Text(0);
    e.seq = st.Int64(1);
    e.wall_us = st.Int64(2);
    e.elapsed_ms = st.Int64(3);
    e.type = st.Text(4);
    e.payload_json = st.Text(5);
    out.push_back(std::move(e));
  }
  return out;
}

absl::StatusOr<int64_t> SqliteTrajectoryStore::LastEventSeq(std::string_view job_id) {
  RETURN_IF_ERROR(Annotate(RequireId("job_id", job_id, "job"), "LastEventSeq"));
  ReadPool::Lease conn = readers_.Acquire();
  ASSIGN_OR_RETURN(Statement st,
                   (*conn).Prepare("SELECT EXISTS (SELECT 1 FROM jobs WHERE id = ?1), "
                                   "(SELECT COALESCE(MAX(seq), 0) FROM events WHERE job_id = ?1)"));
  st.Bind(1, job_id);
  ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row || st.Int64(0) == 0) return Annotate(JobNotFound(job_id), "LastEventSeq");
  return st.Int64(1);
}

// --------------------------------------------------------------- summaries

absl::StatusOr<JobStats> SqliteTrajectoryStore::GetJobStats(std::string_view job_id) {
  RETURN_IF_ERROR(Annotate(RequireId("job_id", job_id, "job"), "GetJobStats"));
  ReadPool::Lease conn = readers_.Acquire();
  // One statement runs in one implicit read transaction, so the numbers agree
  // with each other even while the writer appends.
  ASSIGN_OR_RETURN(
      Statement st,
      (*conn).Prepare(
          "SELECT EXISTS (SELECT 1 FROM jobs WHERE id = ?1), "
          "(SELECT COUNT(*) FROM turns WHERE job_id = ?1), "
          "(SELECT COUNT(*) FROM llm_calls WHERE job_id = ?1), "
          "(SELECT COALESCE(SUM(prompt_tokens + completion_tokens), 0) FROM llm_calls "
          "   WHERE job_id = ?1), "
          "(SELECT COALESCE(SUM(cost_usd), 0.0) FROM llm_calls WHERE job_id = ?1), "
          "(SELECT COUNT(*) FROM evaluations WHERE job_id = ?1 AND role = 'search'), "
          "(SELECT status FROM evaluations WHERE job_id = ?1 AND role = 'search' "
          "   ORDER BY elapsed_ms DESC, rowid DESC LIMIT 1), "
          "(SELECT e.candidate_sha256 FROM jobs j JOIN evaluations e "
          "   ON e.id = j.best_evaluation_id WHERE j.id = ?1), "
          "(SELECT e.roofline_fraction FROM jobs j JOIN evaluations e "
          "   ON e.id = j.best_evaluation_id WHERE j.id = ?1), "
          "(SELECT MAX(seq) FROM events WHERE job_id = ?1), "
          "(SELECT elapsed_ms FROM events WHERE job_id = ?1 ORDER BY seq DESC LIMIT 1), "
          "(SELECT COUNT(*) FROM evaluations WHERE job_id = ?1 AND role = 'search' "
          "   AND comparable = 0), "
          "(SELECT MAX(speedup) FROM evaluations WHERE job_id = ?1 AND role = 'search' "
          "   AND comparable = 0 AND correct = 1), "
          "(SELECT id || ' ' || status || ' ' || candidate_sha256 FROM evaluations "
          "   WHERE job_id = ?1 AND role = 'final' ORDER BY elapsed_ms DESC, rowid DESC LIMIT 1), "
          "(SELECT speedup FROM evaluations WHERE job_id = ?1 AND role = 'final' "
          "   ORDER BY elapsed_ms DESC, rowid DESC LIMIT 1), "
          "(SELECT roofline_fraction FROM evaluations WHERE job_id = ?1 AND role = 'final' "
          "   ORDER BY elapsed_ms DESC, rowid DESC LIMIT 1)"));
  st.Bind(1, job_id);
  ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row || st.Int64(0) == 0) return Annotate(JobNotFound(job_id), "GetJobStats");
  JobStats s;
  s.turns = static_cast<int32_t>(st.Int64(1));
  s.llm_calls = static_cast<int32_t>(st.Int64(2));
  s.tokens = st.Int64(3);
  s.cost_usd = st.Double(4);
  s.evaluations = static_cast<int32_t>(st.Int64(5));
  s.last_evaluation_status = st.IsNull(6) ? "" : st.Text(6);
  s.best_candidate_sha256 = st.IsNull(7) ? "" : st.Text(7);
  s.best_roofline_fraction = st.OptionalDouble(8);
  s.last_event_seq = st.IsNull(9) ? 0 : st.Int64(9);
  s.last_event_elapsed_ms = st.IsNull(10) ? 0 : st.Int64(10);
  s.other_evaluations = static_cast<int32_t>(st.Int64(11));
  s.other_best_speedup = st.OptionalDouble(12);
  if (!st.IsNull(13)) {
    // id, status and sha256 never contain spaces (validated on insert).
    const std::string f = st.Text(13);
    const size_t a = f.find(' '), b = f.rfind(' ');
    if (a != std::string::npos && b > a) {
      s.final_evaluation_id = f.substr(0, a);
      s.final_status = f.substr(a + 1, b - a - 1);
      s.final_candidate_sha256 = f.substr(b + 1);
    }
  }
  s.final_speedup = st.OptionalDouble(14);
  s.final_roofline_fraction = st.OptionalDouble(15);
  return s;
}

}  // namespace pkforge::storage::store_internal

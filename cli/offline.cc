#include "cli/offline.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "common/ids.h"
#include "common/status.h"
#include "google/protobuf/util/json_util.h"

namespace pkforge::cli {

using storage::TrajectoryStore;
using Access = TrajectoryStore::Options::Access;

Access DbAccessFor(const std::string& db) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string wal = db + "-wal";
  if (fs::exists(wal, ec) && fs::file_size(wal, ec) > 0) return Access::kReadOnly;
  struct stat st {};
  if (stat(db.c_str(), &st) != 0) return Access::kReadOnly;
  // No write bit at all counts too: root passes access(W_OK) on a 0444 file,
  // but whoever made it 0444 meant it not to change.
  const bool file_fixed = (st.st_mode & 0222) == 0 || access(db.c_str(), W_OK) != 0;
  fs::path dir = fs::absolute(db, ec).parent_path();
  struct stat dst {};
  const bool dir_fixed = stat(dir.c_str(), &dst) == 0 &&
                         ((dst.st_mode & 0222) == 0 || access(dir.c_str(), W_OK) != 0);
  return file_fixed || dir_fixed ? Access::kImmutable : Access::kReadOnly;
}

absl::StatusOr<std::unique_ptr<TrajectoryStore>> OpenDb(const std::string& db) {
  if (db.empty()) return absl::InvalidArgumentError("--db PATH is required");
  TrajectoryStore::Options options;
  options.access = DbAccessFor(db);
  options.read_connections = 1;  // one command, one thread
  auto store = TrajectoryStore::Open(db, options);
  if (!store.ok()) return Annotate(store.status(), "--db");
  return store;
}

namespace {

v1::JobState ProtoState(storage::JobState s) {
  switch (s) {
    case storage::JobState::kQueued:
      return v1::JOB_STATE_QUEUED;
    case storage::JobState::kRunning:
      return v1::JOB_STATE_RUNNING;
    case storage::JobState::kSucceeded:
      return v1::JOB_STATE_SUCCEEDED;
    case storage::JobState::kFailed:
      return v1::JOB_STATE_FAILED;
    case storage::JobState::kCancelled:
      return v1::JOB_STATE_CANCELLED;
    case storage::JobState::kInterrupted:
      return v1::JOB_STATE_INTERRUPTED;
  }
  return v1::JOB_STATE_UNSPECIFIED;
}

}  // namespace

absl::StatusOr<v1::Trajectory> OfflineShowTrajectory(const std::string& db,
                                                     const std::string& job_id) {
  RETURN_IF_ERROR(Annotate(ValidateId(job_id, "job"), "job"));
  ASSIGN_OR_RETURN(std::unique_ptr<TrajectoryStore> store, OpenDb(db));
  ASSIGN_OR_RETURN(storage::JobRecord job, store->GetJob(job_id));
  ASSIGN_OR_RETURN(storage::JobStats stats, store->GetJobStats(job_id));
  v1::Trajectory out;
  v1::Job* j = out.mutable_job();
  j->set_id(job.id);
  // Files of older (or newer) binaries may carry spec fields this one does
  // not know; the rest of the spec is still worth showing.
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;
  if (auto s = google::protobuf::util::JsonStringToMessage(job.spec_json, j->mutable_spec(), opts);
      !s.ok()) {
    return absl::DataLossError(absl::StrCat("job ", job.id, ": spec_json: ", s.ToString()));
  }
  j->set_state(ProtoState(job.state));
  j->set_created_wall_us(job.created_wall_us);
  j->set_started_wall_us(job.started_wall_us);
  j->set_finished_wall_us(job.finished_wall_us);
  if (job.started_wall_us > 0) {
    const int64_t end =
        job.finished_wall_us > 0 ? job.finished_wall_us : SystemClock::Get()->NowWallMicros();
    j->set_elapsed_ms(std::max<int64_t>(0, (end - job.started_wall_us) / 1000));
  }
  j->set_turns(stats.turns);
  j->set_evaluations(stats.evaluations);
  j->set_tokens(stats.tokens);
  j->set_cost_usd(stats.cost_usd);
  if (job.best_speedup) j->set_best_speedup(*job.best_speedup);
  j->set_best_evaluation_id(job.best_evaluation_id);
  j->set_best_candidate_sha256(stats.best_candidate_sha256);
  j->set_best_roofline_fraction(stats.best_roofline_fraction.value_or(0));
  v1::EvaluationResult::Status last = v1::EvaluationResult::STATUS_UNSPECIFIED;
  if (!stats.last_evaluation_status.empty()) {
    v1::EvaluationResult::Status_Parse(stats.last_evaluation_status, &last);
  }
  j->set_last_status(last);
  j->set_error(job.error);
  // The stop reason is the reason of the terminal state event (as GetJob).
  if (storage::IsTerminal(job.state) && stats.last_event_seq > 0) {
    auto events = store->ReadEvents(job_id, stats.last_event_seq - 1, 1);
    if (events.ok() && !events->empty() && (*events)[0].type == "state_changed") {
      v1::Event::JobStateChanged changed;
      if (google::protobuf::util::JsonStringToMessage((*events)[0].payload_json, &changed, opts)
              .ok()) {
        j->set_stop_reason(changed.reason());
      }
    }
  }
  ASSIGN_OR_RETURN(std::vector<storage::EvaluationRecord> evals, store->ListEvaluations(job_id));
  double best = 0;
  for (const auto& e : evals) {
    if (e.correct && e.speedup && *e.speedup > best) {
      best = *e.speedup;
      v1::CurvePoint* c = out.add_best_curve();
      c->set_t_s(static_cast<double>(e.elapsed_ms) / 1e3);
      c->set_best_speedup(best);
    }
  }
  if (!stats.best_candidate_sha256.empty()) {
    ASSIGN_OR_RETURN(storage::CandidateRecord c, store->GetCandidate(stats.best_candidate_sha256));
    v1::Candidate* cand = out.add_candidates();
    cand->set_sha256(c.sha256);
    cand->set_source(c.source);
  }
  return out;
}

}  // namespace pkforge::cli

// SqliteTrajectoryStore, the TrajectoryStore behind TrajectoryStore::Open:
// its group-commit machinery (BatchTxn), its read connections (ReadPool)
// and the class itself. Internal to storage/; its methods live in
// store.cc (group commit, jobs, trajectory), store_events.cc (events,
// summaries) and store_open.cc (opening, page limit).
//
// Layout
// - Group commit for every write. A caller queues a PendingWrite (a function
//   to run on the writer connection) and waits. The first caller that finds
//   no active leader becomes the leader: it takes the queue, runs every write
//   in one BEGIN IMMEDIATE transaction so that a write that fails -- a
//   duplicate id, an unknown job -- is undone alone (by SQLite's statement
//   rollback, or a SAVEPOINT for writes of several statements: WriteShape),
//   COMMITs once (one fsync for the whole batch), wakes each caller of the
//   batch and the oldest caller still queued, who leads next unless another
//   caller takes the lead first. While one batch is being fsynced the next
//   one accumulates, so the fsync rate stays bounded while throughput grows
//   with the number of concurrent writers.
// - One writer connection (writer_), used only by the leader: SQLite admits
//   one writer per file, and leadership is exclusive, so it needs no mutex.
// - A pool of read-only connections (readers_): WAL readers see the last
//   committed snapshot and never block or wait for the writer.
// - Event seqs: the per-job last-seq cache (last_seq_) is only advanced after
//   a successful COMMIT and is dropped entirely on any batch failure; inside a
//   batch, seqs of kept writes are tracked by BatchTxn. So a rolled-back write
//   or batch can never leave a gap or a duplicate: the next use reloads
//   MAX(seq) from the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "common/status.h"
#include "storage/sqlite_util.h"
#include "storage/store.h"
#include "storage/store_rows.h"

namespace pkforge::storage::store_internal {

using internal::Transaction;

// One transaction is capped so a burst of thousands of callers still sees
// bounded commit latency (and a bounded rollback if the batch fails).
constexpr size_t kMaxBatch = 1024;
constexpr int32_t kMaxListLimit = 100000;

// ----------------------------------------------------------------- BatchTxn

// The leader's view of one group-commit transaction: the writer connection,
// and per-job event sequence numbers. A seq becomes visible to later writes
// of the batch only when the write that took it is kept (its savepoint
// released); a rolled-back write's job falls back to MAX(seq) read inside the
// transaction, which already excludes it. Publish() after COMMIT is the only
// way seqs reach the store's committed cache.
class BatchTxn {
 public:
  BatchTxn(Connection* conn, const std::unordered_map<std::string, int64_t>* committed)
      : conn_(conn), committed_(committed) {}

  Connection& conn() { return *conn_; }

  // Inserts `ev` (validated, wall resolved) with its job's next seq.
  // NOT_FOUND for an unknown job.
  absl::StatusOr<int64_t> InsertEvent(const EventRecord& ev, int64_t wall_us) {
    current_job_ = ev.job_id;
    int64_t last = 0;
    if (auto it = batch_.find(ev.job_id); it != batch_.end()) {
      last = it->second;
    } else if (auto c = committed_->find(ev.job_id);
               c != committed_->end() && !stale_.contains(ev.job_id)) {
      last = c->second;
    } else {
      // One statement answers "does the job exist" and "where does its
      // sequence stand" from the transaction's own view.
      ASSIGN_OR_RETURN(Statement st,
                       conn_->Prepare("SELECT EXISTS (SELECT 1 FROM jobs WHERE id = ?1), "
                                      "(SELECT COALESCE(MAX(seq), 0) FROM events "
                                      "WHERE job_id = ?1)"));
      st.Bind(1, ev.job_id);
      ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row || st.Int64(0) == 0) return JobNotFound(ev.job_id);
      last = st.Int64(1);
    }
    const int64_t seq = last + 1;
    ASSIGN_OR_RETURN(Statement st,
                     conn_->Prepare("INSERT INTO events (job_id, seq, wall_us, elapsed_ms, type, "
                                    "payload_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"));
    st.Bind(1, ev.job_id)
        .Bind(2, seq)
        .Bind(3, wall_us)
        .Bind(4, ev.elapsed_ms)
        .Bind(5, ev.type)
        .Bind(6, ev.payload_json);
    RETURN_IF_ERROR(st.Run());
    current_seq_ = seq;
    return seq;
  }

  // The current write was kept: its seq (if it appended an event) counts.
  void Keep() {
    if (current_seq_ != 0) batch_[current_job_] = current_seq_;
    Reset();
  }

  // The current write was rolled back. If it touched an event, the cached
  // position of that job is no longer trusted (a seq conflict means the file
  // disagrees with the cache): reload it from the file on next use.
  void Discard() {
    if (!current_job_.empty()) {
      batch_.erase(current_job_);
      stale_.insert(current_job_);
    }
    Reset();
  }

  // After a successful COMMIT: folds this batch's seqs into `committed`.
  void Publish(std::unordered_map<std::string, int64_t>* committed) const {
    for (const std::string& job : stale_) committed->erase(job);
    for (const auto& [job, seq] : batch_) (*committed)[job] = seq;
  }

 private:
  void Reset() {
    current_job_.clear();
    current_seq_ = 0;
  }

  Connection* conn_;
  const std::unordered_map<std::string, int64_t>* committed_;
  std::unordered_map<std::string, int64_t> batch_;  // last kept seq per job
  std::unordered_set<std::string> stale_;           // jobs whose cached seq is distrusted
  std::string current_job_;                         // event job of the running write
  int64_t current_seq_ = 0;                         // its seq once inserted
};

// ------------------------------------------------------------------ ReadPool

// Fixed set of read-only connections handed out one caller at a time.
class ReadPool {
 public:
  class Lease {
   public:
    Lease(ReadPool* pool, Connection* conn) : pool_(pool), conn_(conn) {}
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() { pool_->Release(conn_); }
    Connection& operator*() const { return *conn_; }

   private:
    ReadPool* pool_;
    Connection* conn_;
  };

  void Add(std::unique_ptr<Connection> conn) {
    absl::MutexLock lock(&mu_);
    free_.push_back(conn.get());
    all_.push_back(std::move(conn));
  }

  Lease Acquire() {
    absl::MutexLock lock(&mu_);
    while (free_.empty()) cv_.Wait(&mu_);
    Connection* conn = free_.back();
    free_.pop_back();
    return Lease(this, conn);
  }

 private:
  void Release(Connection* conn) {
    {
      absl::MutexLock lock(&mu_);
      free_.push_back(conn);
    }
    cv_.Signal();
  }

  absl::Mutex mu_;
  absl::CondVar cv_;  // a connection was returned (with mu_)
  std::vector<Connection*> free_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<Connection>> all_ ABSL_GUARDED_BY(mu_);
};

// ---------------------------------------------------------------- the store

class SqliteTrajectoryStore final : public TrajectoryStore {
 public:
  SqliteTrajectoryStore(std::string path, Options options, std::unique_ptr<Connection> writer)
      : path_(std::move(path)), options_(options), writer_(std::move(writer)) {}

  ReadPool& readers() { return readers_; }

  const std::string& path() const override { return path_; }

  absl::StatusOr<int> SchemaVersion() override {
    ReadPool::Lease conn = readers_.Acquire();
    return internal::ReadUserVersion((*conn).db());
  }

  absl::Status CreateJob(const JobRecord& job) override;
  absl::Status UpdateJobState(std::string_view job_id, JobState state, std::string_view error,
                              int64_t wall_us) override;
  absl::StatusOr<JobRecord> GetJob(std::string_view job_id) override;
  absl::StatusOr<std::optional<JobRecord>> FindJobByClientRequestId(
      std::string_view client_request_id) override;
  absl::StatusOr<std::vector<JobRecord>> ListJobs(const JobFilter& filter) override;
  absl::StatusOr<std::vector<JobRecord>> ListJobSummaries(const JobFilter& filter) override;
  absl::StatusOr<std::vector<JobRecord>> ListUnfinishedJobs() override;

  absl::Status AddTurn(const TurnRecord& turn) override;
  absl::Status AddLlmCall(const LlmCallRecord& call) override;
  absl::StatusOr<bool> PutCandidate(const CandidateRecord& candidate) override;
  absl::StatusOr<CandidateRecord> GetCandidate(std::string_view sha256) override;
  absl::Status AddEvaluation(const EvaluationRecord& evaluation) override;

  absl::StatusOr<std::vector<TurnRecord>> ListTurns(std::string_view job_id) override;
  absl::StatusOr<std::vector<LlmCallRecord>> ListLlmCalls(std::string_view job_id) override;
  absl::StatusOr<std::vector<EvaluationRecord>> ListEvaluations(std::string_view job_id) override;
  absl::StatusOr<std::vector<EvaluationRecord>> ListEvaluationPoints(
      std::string_view job_id) override;
  // Shared body of the per-job list readers: validates the id, checks the job
  // exists (NOT_FOUND otherwise), runs `sql` with ?1 = job_id on a read
  // connection and maps each row with `read_row`.
  template <typename Record, typename ReadRow>
  absl::StatusOr<std::vector<Record>> ListForJob(const char* op, std::string_view job_id,
                                                 const std::string& sql, ReadRow read_row);

  absl::StatusOr<int64_t> AppendEvent(const EventRecord& event) override;
  absl::StatusOr<int64_t> AppendEventWith(const StepRows& rows, const EventRecord& event) override;
  absl::StatusOr<std::vector<EventRecord>> ReadEvents(std::string_view job_id, int64_t after_seq,
                                                      int32_t limit) override;
  absl::StatusOr<int64_t> LastEventSeq(std::string_view job_id) override;

  absl::StatusOr<JobStats> GetJobStats(std::string_view job_id) override;

  absl::StatusOr<int64_t> SetMaxPageCount(int64_t pages) override;

 private:
  // ListJobs and ListJobSummaries: the filter's SELECT of `columns`.
  absl::StatusOr<std::vector<JobRecord>> SelectJobs(std::string_view what, const char* columns,
                                                    const JobFilter& filter);
  // ListEvaluations and ListEvaluationPoints: one job's rows of `columns`.
  absl::StatusOr<std::vector<EvaluationRecord>> SelectEvaluations(const char* what,
                                                                  const char* columns,
                                                                  std::string_view job_id);
  using WriteFn = absl::FunctionRef<absl::Status(BatchTxn&)>;

  // How a write changes the database, which decides how it is undone alone
  // when it fails inside a batch.
  enum class WriteShape {
    // At most one statement modifies the database (anything before it only
    // reads). SQLite backs a failed statement out by itself (statement
    // rollback), so the write needs no savepoint; this keeps the hot
    // AppendEvent path as cheap as before group commit covered every write.
    kOneStatement,
    // Several modifying statements (a step, an evaluation and its best-
    // speedup update): run under a savepoint so a failure part-way also
    // undoes the statements that succeeded.
    kMultiStatement,
  };

  // One caller's write in the group-commit queue. Lives on the caller's
  // stack; the caller blocks until `done`, so the leader may run `fn` (which
  // refers to the caller's arguments) and fill `status`. `done` is guarded by
  // group_mu_, which also publishes `status`. Each waiter has its own
  // condition variable so a finished batch wakes exactly its own callers and
  // one candidate leader, not every thread queued behind it.
  struct PendingWrite {
    PendingWrite(WriteShape shape, WriteFn fn) : shape(shape), fn(fn) {}
    WriteShape shape;
    WriteFn fn;
    absl::Status status;
    bool done = false;
    absl::CondVar cv;  // waited on with group_mu_
  };

  int64_t WallOrNow(int64_t wall_us) const {
    return wall_us != 0 ? wall_us : options_.clock->NowWallMicros();
  }

  // Queues `fn` for the next group commit and returns once it is durable (OK)
  // or has failed (its own error, or the batch's), annotated with `what`.
  absl::Status Write(const char* what, WriteShape shape, WriteFn fn);
  // Leader only: runs `batch` in one transaction and fills every status.
  void CommitBatch(const std::vector<PendingWrite*>& batch);
  // Leader only: runs one write so that its failure undoes only itself (see
  // WriteShape). Returns an error only when the whole transaction is lost
  // (SQLite rolled it back, or the savepoint could not be undone); the
  // write's own failure goes to w->status.
  absl::Status RunWrite(BatchTxn& txn, PendingWrite* w);

  // The shared body of AppendEvent and AppendEventWith.
  absl::StatusOr<int64_t> AppendStep(const char* what, const StepRows& rows,
                                     const EventRecord& event);

  const std::string path_;
  const Options options_;

  // Used only by the current group-commit leader (leader_active_ makes the
  // leader unique), never concurrently.
  std::unique_ptr<Connection> writer_;
  std::unordered_map<std::string, int64_t> last_seq_;  // committed seqs only

  absl::Mutex group_mu_;
  std::deque<PendingWrite*> pending_ ABSL_GUARDED_BY(group_mu_);
  bool leader_active_ ABSL_GUARDED_BY(group_mu_) = false;

  // Declared last so it is destroyed first: read connections close before the
  // writer, whose close then checkpoints the WAL and removes it.
  ReadPool readers_;
};

}  // namespace pkforge::storage::store_internal

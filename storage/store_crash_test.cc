// Crash durability of the trajectory store: a child process appends events and
// acknowledges each seq on a pipe only after AppendEvent returned; the parent
// SIGKILLs it at different moments and then checks that the file is intact
// and that every acknowledged event is there, with its payload, in a
// contiguous sequence. This is the property the orchestrator relies on when
// it acknowledges an event to a client.
//
// A second test does the same with whole agent steps (AppendEventWith: a
// turn, a candidate, an LLM call and an evaluation committed with their
// event): after every crash each step is either fully present -- all four
// rows and its event -- or absent, and every acknowledged step is present.
//
// SIGKILL loses no page-cache data, so this checks the commit protocol
// (acknowledge only after COMMIT) and crash recovery of WAL and -shm, not the
// fsync itself (which only a power cut would exercise).
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "common/ids.h"
#include "common/sha256.h"
#include "fmt/format.h"
#include "gtest/gtest.h"
#include "storage/store.h"

namespace pkforge::storage {
namespace {

// One acknowledgement. 24 bytes: below PIPE_BUF, so each write is atomic even
// with several child threads writing at once.
struct Ack {
  int64_t seq;
  int32_t round;
  int32_t thread;
  int64_t i;
};

std::string Payload(int32_t round, int32_t thread, int64_t i) {
  return "{\"round\":" + std::to_string(round) + ",\"thread\":" + std::to_string(thread) +
         ",\"i\":" + std::to_string(i) + "}";
}

std::string IntegrityCheck(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    return "cannot open";
  }
  sqlite3_stmt* st = nullptr;
  std::string result = "prepare failed";
  if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, nullptr) == SQLITE_OK) {
    result.clear();
    while (sqlite3_step(st) == SQLITE_ROW) {
      if (!result.empty()) result += "; ";
      result += reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    }
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return result;
}

std::string MakeTempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "store_crash_test.XXXXXX").string();
  EXPECT_NE(mkdtemp(tmpl.data()), nullptr);
  return tmpl;
}

JobRecord MakeJob() {
  JobRecord job;
  job.id = NewId("job");
  job.spec_json = "{}";
  job.problem = "allreduce";
  job.backend = "host";
  job.dtype = "f32";
  job.agent_kind = "search";
  return job;
}

void CreateJob(const std::string& path, const JobRecord& job) {
  // Closed before any fork: an SQLite connection must not cross a fork.
  auto store = TrajectoryStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->CreateJob(job).ok());
}

// Forks a child that runs `child_main(write_fd)` (which must only _exit),
// SIGKILLs it once it has acknowledged `kill_after` writes (0: a few ms after
// the fork, typically during its Open), and returns every acknowledgement it
// made, including those still in the pipe when it died.
std::vector<Ack> RunAndKill(int kill_after, const std::function<void(int)>& child_main) {
  int fds[2];
  if (pipe(fds) != 0) {
    ADD_FAILURE() << "pipe: " << strerror(errno);
    return {};
  }
  pid_t pid = fork();
  if (pid < 0) {
    ADD_FAILURE() << "fork: " << strerror(errno);
    return {};
  }
  if (pid == 0) {
    close(fds[0]);
    child_main(fds[1]);
    _exit(6);
  }
  close(fds[1]);

  std::vector<Ack> acks;
  std::string buf;
  auto read_some = [&]() -> bool {  // false on EOF
    char chunk[4096];
    ssize_t n = read(fds[0], chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) return true;
    if (n <= 0) return false;
    buf.append(chunk, static_cast<size_t>(n));
    while (buf.size() >= sizeof(Ack)) {
      Ack a;
      std::memcpy(&a, buf.data(), sizeof(Ack));
      acks.push_back(a);
      buf.erase(0, sizeof(Ack));
    }
    return true;
  };

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  if (kill_after == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
  } else {
    while (static_cast<int>(acks.size()) < kill_after &&
           std::chrono::steady_clock::now() < deadline) {
      if (!read_some()) break;
    }
  }
  EXPECT_EQ(kill(pid, SIGKILL), 0);
  // Acknowledgements already in the pipe count: each was written only after
  // its write returned.
  while (read_some()) {
  }
  close(fds[0]);
  int wstatus = 0;
  EXPECT_EQ(waitpid(pid, &wstatus, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(wstatus))
      << "child exited on its own with status " << WEXITSTATUS(wstatus);
  EXPECT_TRUE(buf.empty()) << "torn acknowledgement";
  if (kill_after > 1) {
    EXPECT_GE(acks.size(), 1u) << "child made no progress";
  }
  return acks;
}

void WriteAck(int fd, const Ack& ack) {
  ssize_t n;
  do {
    n = write(fd, &ack, sizeof(ack));
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(sizeof(ack))) _exit(4);
}

// One value of a single-value query, through a raw connection.
int64_t QueryInt(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  int64_t v = -1;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
      v = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return v;
}

// Runs in the forked child until killed: kThreads threads each call
// `append(thread, i)` for i = 0, 1, ... and acknowledge every returned seq.
// Only _exit: the child must never return into the test framework of the
// parent's copy.
constexpr int kChildThreads = 4;

[[noreturn]] void ChildLoop(
    const std::string& path, int round, int fd,
    const std::function<absl::StatusOr<int64_t>(TrajectoryStore&, int, int64_t)>& append) {
  auto store = TrajectoryStore::Open(path);
  if (!store.ok()) _exit(2);
  std::vector<std::thread> threads;
  for (int t = 0; t < kChildThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int64_t i = 0;; ++i) {
        auto seq = append(**store, t, i);
        if (!seq.ok()) _exit(3);
        WriteAck(fd, Ack{*seq, round, t, i});
      }
    });
  }
  for (auto& th : threads) th.join();
  _exit(5);
}

// Checks the events of `job` after a crash: seqs 1..n, every acknowledged
// seq (across all rounds so far) present with its payload, and each child
// thread's events a gap-free run 0..k (an acknowledged event implies all
// earlier ones of that thread are stored). Returns n.
int64_t CheckEvents(TrajectoryStore& store, const std::string& job,
                    const std::map<int64_t, Ack>& acked,
                    const std::function<std::string(const Ack&)>& payload) {
  auto events = store.ReadEvents(job, 0, 100000);
  EXPECT_TRUE(events.ok()) << events.status();
  if (!events.ok()) return 0;
  const int64_t count = static_cast<int64_t>(events->size());
  for (int64_t k = 0; k < count; ++k) EXPECT_EQ((*events)[k].seq, k + 1);
  for (const auto& [seq, a] : acked) {
    EXPECT_LE(seq, count) << "acknowledged seq " << seq << " missing after crash";
    if (seq > count) continue;
    EXPECT_EQ((*events)[seq - 1].payload_json, payload(a));
  }
  std::map<std::pair<int32_t, int32_t>, int64_t> per_thread;
  for (const auto& ev : *events) {
    int r = -1, t = -1;
    long long i = -1;
    EXPECT_EQ(sscanf(ev.payload_json.c_str(), "{\"round\":%d,\"thread\":%d,\"i\":%lld", &r, &t, &i),
              3)
        << ev.payload_json;
    auto it = per_thread.emplace(std::make_pair(r, t), -1).first;
    EXPECT_EQ(i, it->second + 1) << "round " << r << " thread " << t;
    it->second = i;
  }
  return count;
}

TEST(StoreCrashTest, AcknowledgedEventsSurviveSigkill) {
  const std::string dir = MakeTempDir();
  const std::string path = dir + "/traj.db";
  const JobRecord job = MakeJob();
  ASSERT_NO_FATAL_FAILURE(CreateJob(path, job));

  // Kill points: during the child's Open (0), right after the first
  // acknowledgement, and after progressively longer runs (the last spans WAL
  // auto-checkpoints). All rounds append to the same job, so later rounds also
  // check that the sequence resumes correctly after a crash.
  const std::vector<int> kill_after_acks = {0, 1, 25, 100, 300, 1500};
  auto payload = [](const Ack& a) { return Payload(a.round, a.thread, a.i); };
  std::map<int64_t, Ack> acked;  // by seq, across all rounds
  int64_t last_count = 0;

  for (int round = 0; round < static_cast<int>(kill_after_acks.size()); ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    std::vector<Ack> round_acks = RunAndKill(kill_after_acks[round], [&](int fd) {
      ChildLoop(path, round, fd, [&](TrajectoryStore& store, int t, int64_t i) {
        EventRecord ev;
        ev.job_id = job.id;
        ev.wall_us = 1;
        ev.elapsed_ms = i;
        ev.type = "crash_test";
        ev.payload_json = Payload(round, t, i);
        return store.AppendEvent(ev);
      });
    });
    for (const Ack& a : round_acks) {
      EXPECT_TRUE(acked.emplace(a.seq, a).second) << "seq " << a.seq << " acknowledged twice";
    }

    // Recovery: integrity first (before the store's own open touches it),
    // then every acknowledged event with its payload, contiguous seqs.
    EXPECT_EQ(IntegrityCheck(path), "ok");
    auto store = TrajectoryStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    const int64_t count = CheckEvents(**store, job.id, acked, payload);
    EXPECT_GE(count, last_count) << "events were lost";
    std::printf("round %d: killed after %zu acknowledgements; %lld events stored in total\n", round,
                round_acks.size(), static_cast<long long>(count));
    last_count = count;
  }
  // The sequence continues after the last crash.
  {
    auto store = TrajectoryStore::Open(path);
    ASSERT_TRUE(store.ok());
    EventRecord ev{job.id, 0, 1, 0, "after", "{}"};
    auto seq = (*store)->AppendEvent(ev);
    ASSERT_TRUE(seq.ok()) << seq.status();
    EXPECT_EQ(*seq, last_count + 1);
  }
  EXPECT_GE(acked.size(), 100u);
  std::filesystem::remove_all(dir);
}

// The ids of one step, derived from (round, thread, i) so the parent can
// recompute what an acknowledged step wrote. Ids need the ULID shape, so the
// numbers are spelled in Crockford base32 digits after a fixed prefix.
std::string StepId(const char* prefix, int round, int thread, int64_t i) {
  static constexpr char kDigits[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
  std::string tail;
  const uint64_t n = ((static_cast<uint64_t>(round) * 8 + static_cast<uint64_t>(thread)) << 40) |
                     static_cast<uint64_t>(i);
  for (uint64_t v = n; tail.size() < 15; v >>= 5) {
    tail.insert(tail.begin(), kDigits[v & 31]);
  }
  return std::string(prefix) + "_01JCRASHTES" + tail;
}

// The step event's payload: Payload's fields plus the ids of its rows.
std::string StepPayload(const Ack& a) {
  return fmt::format(R"({{"round":{},"thread":{},"i":{},"turn":"{}","llm":"{}","eval":"{}"}})",
                     a.round, a.thread, a.i, StepId("turn", a.round, a.thread, a.i),
                     StepId("llm", a.round, a.thread, a.i), StepId("eval", a.round, a.thread, a.i));
}

TEST(StoreCrashTest, StepsAreAllOrNothingAcrossSigkill) {
  const std::string dir = MakeTempDir();
  const std::string path = dir + "/traj.db";
  const JobRecord job = MakeJob();
  ASSERT_NO_FATAL_FAILURE(CreateJob(path, job));
  ASSERT_TRUE(ValidateId(StepId("turn", 5, 3, 123456), "turn").ok())
      << StepId("turn", 5, 3, 123456);

  const std::vector<int> kill_after_acks = {0, 1, 25, 200, 800};
  std::map<int64_t, Ack> acked;
  int64_t last_count = 0;
  for (int round = 0; round < static_cast<int>(kill_after_acks.size()); ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    std::vector<Ack> round_acks = RunAndKill(kill_after_acks[round], [&](int fd) {
      ChildLoop(path, round, fd, [&](TrajectoryStore& store, int t, int64_t i) {
        const Ack me{0, round, t, i};
        TurnRecord turn;
        turn.id = StepId("turn", round, t, i);
        turn.job_id = job.id;
        turn.index = static_cast<int32_t>((round * kChildThreads + t) * 10'000'000 + i);
        CandidateRecord cand;
        cand.source = "// " + turn.id + "\n" + std::string(2000, 'x');  // a few pages per step
        cand.sha256 = Sha256Hex(cand.source);
        cand.backend = "host";
        LlmCallRecord call;
        call.id = StepId("llm", round, t, i);
        call.job_id = job.id;
        call.turn_id = turn.id;
        call.provider = "openai";
        call.model = "m";
        call.prompt = std::string(3000, 'p');
        call.reply = cand.source;
        EvaluationRecord eval;
        eval.id = StepId("eval", round, t, i);
        eval.job_id = job.id;
        eval.turn_id = turn.id;
        eval.candidate_sha256 = cand.sha256;
        eval.status = "OK";
        eval.correct = true;
        eval.speedup = 1.0 + static_cast<double>(i) / 1000;
        eval.result_json = "{}";
        EventRecord ev{job.id, 0, 1, i, "step", StepPayload(me)};
        return store.AppendEventWith(
            {.turn = &turn, .llm_call = &call, .candidate = &cand, .evaluation = &eval}, ev);
      });
    });
    for (const Ack& a : round_acks) {
      EXPECT_TRUE(acked.emplace(a.seq, a).second) << "seq " << a.seq << " acknowledged twice";
    }

    EXPECT_EQ(IntegrityCheck(path), "ok");
    const int64_t count = [&] {
      auto store = TrajectoryStore::Open(path);
      EXPECT_TRUE(store.ok()) << store.status();
      return store.ok() ? CheckEvents(**store, job.id, acked, StepPayload) : 0;
    }();
    EXPECT_GE(count, last_count) << "steps were lost";
    last_count = count;
    // All or nothing: every table has exactly one row per stored step event,
    // and each of those rows is the one its event names.
    for (const char* table : {"turns", "llm_calls", "evaluations"}) {
      SCOPED_TRACE(table);
      EXPECT_EQ(QueryInt(path, fmt::format("SELECT COUNT(*) FROM {}", table)), count);
    }
    for (const auto& [table, key] : std::vector<std::pair<std::string, std::string>>{
             {"turns", "turn"}, {"llm_calls", "llm"}, {"evaluations", "eval"}}) {
      SCOPED_TRACE(table);
      EXPECT_EQ(QueryInt(path, fmt::format("SELECT COUNT(*) FROM events e JOIN {} r ON r.id = "
                                           "json_extract(e.payload_json, '$.{}')",
                                           table, key)),
                count);
    }
    EXPECT_EQ(QueryInt(path, "SELECT COUNT(*) FROM candidates"), count);
    std::printf("round %d: killed after %zu acknowledgements; %lld steps stored in total\n", round,
                round_acks.size(), static_cast<long long>(count));
  }
  EXPECT_GE(acked.size(), 100u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pkforge::storage

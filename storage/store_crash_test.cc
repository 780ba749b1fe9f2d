// Crash durability of the trajectory store: a child process appends events and
// acknowledges each seq on a pipe only after AppendEvent returned; the parent
// SIGKILLs it at different moments and then checks that the file is intact
// and that every acknowledged event is there, with its payload, in a
// contiguous sequence. This is the property the orchestrator relies on when
// it acknowledges an event to a client.
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
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "common/ids.h"
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

// Runs in the forked child until killed. Only _exit: the child must never
// return into the test framework of the parent's copy.
[[noreturn]] void ChildMain(const std::string& path, const std::string& job, int round, int fd) {
  auto store = TrajectoryStore::Open(path);
  if (!store.ok()) _exit(2);
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int64_t i = 0;; ++i) {
        EventRecord ev;
        ev.job_id = job;
        ev.wall_us = 1;
        ev.elapsed_ms = i;
        ev.type = "crash_test";
        ev.payload_json = Payload(round, t, i);
        auto seq = (*store)->AppendEvent(ev);
        if (!seq.ok()) _exit(3);
        Ack ack{*seq, round, t, i};
        ssize_t n;
        do {
          n = write(fd, &ack, sizeof(ack));
        } while (n < 0 && errno == EINTR);
        if (n != static_cast<ssize_t>(sizeof(ack))) _exit(4);
      }
    });
  }
  for (auto& th : threads) th.join();
  _exit(5);
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

TEST(StoreCrashTest, AcknowledgedEventsSurviveSigkill) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "store_crash_test.XXXXXX").string();
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  const std::string dir = tmpl;
  const std::string path = dir + "/traj.db";

  JobRecord job;
  job.id = NewId("job");
  job.spec_json = "{}";
  job.problem = "allreduce";
  job.backend = "host";
  job.dtype = "f32";
  job.agent_kind = "search";
  {
    // Closed before any fork: an SQLite connection must not cross a fork.
    auto store = TrajectoryStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->CreateJob(job).ok());
  }

  // Kill points: during the child's Open (0), right after the first
  // acknowledgement, and after progressively longer runs (the last spans WAL
  // auto-checkpoints). All rounds append to the same job, so later rounds also
  // check that the sequence resumes correctly after a crash.
  const std::vector<int> kill_after_acks = {0, 1, 25, 100, 300, 1500};
  const auto round_deadline = std::chrono::seconds(3);
  std::map<int64_t, Ack> acked;  // by seq, across all rounds
  int64_t last_count = 0;

  for (int round = 0; round < static_cast<int>(kill_after_acks.size()); ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    pid_t pid = fork();
    ASSERT_GE(pid, 0) << strerror(errno);
    if (pid == 0) {
      close(fds[0]);
      ChildMain(path, job.id, round, fds[1]);
    }
    close(fds[1]);

    std::vector<Ack> round_acks;
    std::string buf;
    auto consume = [&] {
      while (buf.size() >= sizeof(Ack)) {
        Ack a;
        std::memcpy(&a, buf.data(), sizeof(Ack));
        round_acks.push_back(a);
        buf.erase(0, sizeof(Ack));
      }
    };
    auto read_some = [&]() -> bool {  // false on EOF
      char chunk[4096];
      ssize_t n = read(fds[0], chunk, sizeof(chunk));
      if (n < 0 && errno == EINTR) return true;
      if (n <= 0) return false;
      buf.append(chunk, static_cast<size_t>(n));
      consume();
      return true;
    };

    const auto start = std::chrono::steady_clock::now();
    if (kill_after_acks[round] == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
    } else {
      while (static_cast<int>(round_acks.size()) < kill_after_acks[round] &&
             std::chrono::steady_clock::now() - start < round_deadline) {
        if (!read_some()) break;
      }
    }
    ASSERT_EQ(kill(pid, SIGKILL), 0);
    // Acknowledgements already in the pipe count: each was written only after
    // its AppendEvent returned.
    while (read_some()) {
    }
    close(fds[0]);
    int wstatus = 0;
    ASSERT_EQ(waitpid(pid, &wstatus, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(wstatus))
        << "child exited on its own with status " << WEXITSTATUS(wstatus);
    EXPECT_TRUE(buf.empty()) << "torn acknowledgement";
    if (kill_after_acks[round] > 1) {
      EXPECT_GE(static_cast<int>(round_acks.size()), 1) << "child made no progress";
    }

    // Recovery: integrity first (before the store's own open touches it),
    // then every acknowledged event with its payload, contiguous seqs.
    EXPECT_EQ(IntegrityCheck(path), "ok");
    auto store = TrajectoryStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    auto events = (*store)->ReadEvents(job.id, 0, 100000);
    ASSERT_TRUE(events.ok()) << events.status();
    const int64_t count = static_cast<int64_t>(events->size());
    for (int64_t k = 0; k < count; ++k) ASSERT_EQ((*events)[k].seq, k + 1);
    EXPECT_GE(count, last_count) << "events were lost";
    std::printf("round %d: killed after %zu acknowledgements; %lld events stored in total\n", round,
                round_acks.size(), static_cast<long long>(count));
    last_count = count;
    for (const Ack& a : round_acks) {
      EXPECT_TRUE(acked.emplace(a.seq, a).second) << "seq " << a.seq << " acknowledged twice";
    }
    for (const auto& [seq, a] : acked) {
      ASSERT_LE(seq, count) << "acknowledged seq " << seq << " missing after crash";
      EXPECT_EQ((*events)[seq - 1].payload_json, Payload(a.round, a.thread, a.i));
    }
    // Each child thread's acknowledged events are a gap-free run 0..k: an
    // acknowledged event implies all earlier ones of that thread are stored.
    std::map<std::pair<int32_t, int32_t>, int64_t> per_thread;
    for (const auto& ev : *events) {
      int r = -1, t = -1;
      long long i = -1;
      ASSERT_EQ(
          sscanf(ev.payload_json.c_str(), "{\"round\":%d,\"thread\":%d,\"i\":%lld}", &r, &t, &i),
          3);
      auto it = per_thread.emplace(std::make_pair(r, t), -1).first;
      EXPECT_EQ(i, it->second + 1) << "round " << r << " thread " << t;
      it->second = i;
    }
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

}  // namespace
}  // namespace pkforge::storage

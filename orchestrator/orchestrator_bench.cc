// orchestrator_bench: N concurrent LLM jobs against pkforge-orchestrator
// pinned to one core (taskset), with the fake LLM provider and the fake
// executor in this process (on other cores), one WatchJob stream per job.
//
// Reports the orchestrator's CPU time and peak RSS, and event latency as the
// watchers see it: receive time minus the event's wall_us (when the agent
// recorded the step, so it includes the SQLite writes of the step's rows,
// the event commit, the fan-out and the gRPC delivery), p50/p90/p99/max.
//
//   taskset -c 1 build/bench/orchestrator_bench --jobs 500 --cpu 0
#include <sched.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "agent/testing/fake_http_server.h"
#include "common/clock.h"
#include "fmt/format.h"
#include "orchestrator/convert.h"
#include "orchestrator/testing/fake_executor.h"
#include "orchestrator/testing/test_util.h"

using namespace pkforge;  // NOLINT: a benchmark main
using orchestrator::testing::ChildProcess;

namespace {

struct ProcStats {
  double cpu_s = 0;
  int64_t hwm_kb = 0;
};

ProcStats ReadProc(pid_t pid) {
  ProcStats s;
  std::ifstream stat(fmt::format("/proc/{}/stat", pid));
  std::string all((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  auto close = all.rfind(')');
  if (close != std::string::npos) {
    std::istringstream rest(all.substr(close + 2));
    std::string field;
    long long utime = 0, stime = 0;
    for (int i = 3; i <= 15 && rest >> field; ++i) {
      if (i == 14) utime = std::stoll(field);
      if (i == 15) stime = std::stoll(field);
    }
    s.cpu_s = static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
  }
  std::ifstream status(fmt::format("/proc/{}/status", pid));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) s.hwm_kb = std::atoll(line.c_str() + 6);
  }
  return s;
}

double Pct(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  size_t i = static_cast<size_t>(q * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<long>(i), v.end());
  return v[i];
}

}  // namespace

// Long (~150 lines): flags, the fake provider and executor, the orchestrator,
// the load, then the report, in the order one benchmark run goes through them.
int main(int argc, char** argv) {
  int jobs = 500, turns = 3, provider_ms = 50, executor_ms = 20, cpu = 0, metrics_port = 0;
  std::string db_dir;
  std::string orch_bin = PKFORGE_ORCH_BIN;
  CLI::App app{"orchestrator_bench"};
  app.add_option("--jobs", jobs);
  app.add_option("--turns", turns);
  app.add_option("--provider-ms", provider_ms);
  app.add_option("--executor-ms", executor_ms);
  app.add_option("--cpu", cpu, "Core the orchestrator is pinned to (taskset)");
  app.add_option("--orchestrator-bin", orch_bin);
  app.add_option("--db-dir", db_dir, "Where the database goes (default: a temp dir; /dev/shm "
                                     "separates fsync cost from the rest)");
  app.add_option("--metrics-port", metrics_port, "Port for the orchestrator's /metrics");
  CLI11_PARSE(app, argc, argv);

  const std::string dir = db_dir.empty() ? orchestrator::testing::MakeTempDir("orch_bench")
                                         : db_dir + "/orch_bench." + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  if (metrics_port == 0) metrics_port = 20000 + getpid() % 20000;
  setenv("PKF_BENCH_KEY", "sk-bench-key-0123456789", 1);
  auto exec = orchestrator::testing::FakeExecutor::Start({.delay_ms = executor_ms});
  auto provider = agent::testing::FakeHttpServer::Start();
  if (!exec.ok() || !provider.ok()) {
    std::fprintf(stderr, "cannot start fakes\n");
    return 1;
  }
  std::atomic<int> replies{0};
  (*provider)->SetDefault([&](const agent::testing::RecordedRequest&) {
    auto r = agent::testing::FakeHttpServer::OpenAiReply(
        fmt::format("```cuda\n#include \"pkforge/candidate.h\"\n// variant {}\n```\n", ++replies),
        1000, 200);
    r.delay_ms = provider_ms;
    return r;
  });
  auto orch = ChildProcess::Start(
      {"/usr/bin/taskset", "-c", std::to_string(cpu), orch_bin, "--listen", "127.0.0.1:0", "--db",
       dir + "/traj.db", "--executor", (*exec)->address(), "--max-concurrent-jobs",
       std::to_string(jobs), "--log-level", "warn", "--metrics-listen",
       fmt::format("127.0.0.1:{}", metrics_port), "--provider",
       "bench=openai," + (*provider)->base_url() + "/v1,PKF_BENCH_KEY"},
      30, dir + "/orchestrator.log");
  if (!orch.ok()) {
    std::fprintf(stderr, "%s\n", orch.status().ToString().c_str());
    return 1;
  }
  auto stub = orchestrator::testing::Client((*orch)->address());
  const ProcStats idle = ReadProc((*orch)->pid());

  const auto t0 = std::chrono::steady_clock::now();
  std::mutex mu;
  std::vector<double> latency_ms;
  std::atomic<int> ok_jobs{0}, events{0}, submitted{0}, failed{0};
  // One thread per job: submit, then watch it live from seq 0 at once (the
  // way a client follows its own job), measuring only events that happened
  // after the stream opened.
  std::vector<std::thread> watchers;
  for (int i = 0; i < jobs; ++i) {
    watchers.emplace_back([&] {
      v1::Job job;
      {
        grpc::ClientContext ctx;
        v1::SubmitJobRequest req;
        *req.mutable_spec() = orchestrator::testing::LlmSpec("bench", turns);
        grpc::Status s = stub->SubmitJob(&ctx, req, &job);
        if (!s.ok()) {
          std::fprintf(stderr, "submit: %s\n", s.error_message().c_str());
          failed.fetch_add(1);
          return;
        }
        submitted.fetch_add(1);
      }
      grpc::ClientContext ctx;
      v1::WatchJobRequest req;
      req.set_job_id(job.id());
      auto reader = stub->WatchJob(&ctx, req);
      v1::WatchJobResponse resp;
      std::vector<double> mine;
      const int64_t opened_us = SystemClock::Get()->NowWallMicros();
      while (reader->Read(&resp)) {
        if (!resp.has_event()) continue;
        const auto& e = resp.event();
        // Events from before this stream existed are a replay, not latency.
        if (e.wall_us() >= opened_us) {
          mine.push_back(static_cast<double>(SystemClock::Get()->NowWallMicros() - e.wall_us()) /
                         1e3);
        }
        events.fetch_add(1);
        if (e.has_state_changed() && e.state_changed().state() == v1::JOB_STATE_SUCCEEDED) {
          ok_jobs.fetch_add(1);
        }
      }
      reader->Finish();
      std::lock_guard lock(mu);
      latency_ms.insert(latency_ms.end(), mine.begin(), mine.end());
    });
  }
  for (auto& t : watchers) t.join();
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const ProcStats end = ReadProc((*orch)->pid());
  // Server side: the commit + fan-out histogram from /metrics.
  std::string metrics;
  if (FILE* p = popen(fmt::format("curl -s http://127.0.0.1:{}/metrics", metrics_port).c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), p)) > 0) metrics.append(buf, n);
    pclose(p);
  }
  std::vector<std::pair<double, double>> buckets;  // (le, cumulative)
  {
    std::istringstream in(metrics);
    std::string line;
    while (std::getline(in, line)) {
      const std::string key = "pkforge_event_commit_seconds_bucket{le=\"";
      if (line.rfind(key, 0) != 0) continue;
      const std::string le = line.substr(key.size(), line.find('"', key.size()) - key.size());
      buckets.emplace_back(le == "+Inf" ? 1e9 : std::stod(le),
                           std::stod(line.substr(line.rfind(' ') + 1)));
    }
  }
  auto bucket_quantile = [&](double q) {
    if (buckets.empty() || buckets.back().second == 0) return -1.0;
    const double target = q * buckets.back().second;
    for (const auto& [le, c] : buckets) {
      if (c >= target) return le * 1e3;
    }
    return -1.0;
  };
  (*orch)->Kill(SIGTERM);
  (*orch)->Wait();

  std::printf("orchestrator_bench: %d LLM jobs x %d turns, provider %d ms, executor %d ms, "
              "orchestrator pinned to cpu %d\n",
              jobs, turns, provider_ms, executor_ms, cpu);
  std::printf("  jobs succeeded      %d / %d\n", ok_jobs.load(), jobs);
  std::printf("  events streamed     %d (latency samples %zu)\n", events.load(), latency_ms.size());
  std::printf("  wall                %.2f s\n", wall_s);
  std::printf("  orchestrator CPU    %.2f s = %.0f%% of one core\n", end.cpu_s - idle.cpu_s,
              100 * (end.cpu_s - idle.cpu_s) / wall_s);
  std::printf("  orchestrator RSS    peak %.1f MiB\n", static_cast<double>(end.hwm_kb) / 1024);
  std::printf("  commit+fan-out (ms) p50 <= %.1f  p99 <= %.1f  (server histogram bucket bounds)\n",
              bucket_quantile(0.5), bucket_quantile(0.99));
  std::printf("  step-to-watcher (ms) p50 %.2f  p90 %.2f  p99 %.2f  max %.2f\n",
              Pct(latency_ms, 0.5), Pct(latency_ms, 0.9), Pct(latency_ms, 0.99),
              Pct(latency_ms, 1.0));
  std::filesystem::remove_all(dir);
  return ok_jobs.load() == jobs ? 0 : 1;
}

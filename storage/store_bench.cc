// Event write throughput of TrajectoryStore::AppendEvent (durable: every call
// returns after its group commit is fsynced).
//
//   build-store/bench/store_bench                  # all series
//   build-store/bench/store_bench --benchmark_filter=disk
//
// Series
// - disk/<own|shared>: DB in $TMPDIR (or /tmp); each commit pays a real fsync.
// - shm/<own|shared>:  DB in /dev/shm (tmpfs, fsync is free), if present, to
//   separate the fsync cost from SQLite and locking overhead.
// - own: every thread appends to its own job (the orchestrator's shape);
//   shared: all threads append to one job (worst case for the seq cache).
// With 8 threads, group commit puts several callers in one transaction, so
// items/s should exceed 1 / fsync latency by a good factor on disk.
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "common/ids.h"
#include "storage/store.h"

namespace pkforge::storage {
namespace {

constexpr int kMaxThreads = 8;

// Shared by the benchmark threads of one run; set up and torn down by the
// single-threaded Setup/Teardown callbacks around each run.
struct BenchDb {
  std::string dir;
  std::unique_ptr<TrajectoryStore> store;
  std::vector<std::string> jobs;  // one per thread
  std::string shared_job;
};
BenchDb* g_db = nullptr;
std::string g_disk_base;

void SetupIn(const std::string& base) {
  std::string tmpl = base + "/store_bench.XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) abort();
  g_db = new BenchDb;
  g_db->dir = tmpl;
  auto store = TrajectoryStore::Open(g_db->dir + "/bench.db");
  if (!store.ok()) abort();
  g_db->store = std::move(store).value();
  auto create = [&] {
    JobRecord j;
    j.id = NewId("job");
    j.spec_json = "{}";
    j.problem = "allreduce";
    j.backend = "cuda";
    j.dtype = "bf16";
    j.agent_kind = "llm";
    if (!g_db->store->CreateJob(j).ok()) abort();
    return j.id;
  };
  for (int t = 0; t < kMaxThreads; ++t) g_db->jobs.push_back(create());
  g_db->shared_job = create();
}

void SetupDisk(const benchmark::State&) { SetupIn(g_disk_base); }
void SetupShm(const benchmark::State&) { SetupIn("/dev/shm"); }

void Teardown(const benchmark::State&) {
  std::string dir = g_db->dir;
  delete g_db;
  g_db = nullptr;
  std::filesystem::remove_all(dir);
}

void AppendEvents(benchmark::State& state, bool shared) {
  EventRecord ev;
  ev.job_id = shared ? g_db->shared_job : g_db->jobs[state.thread_index()];
  ev.wall_us = 1'700'000'000'000'000;
  ev.elapsed_ms = 1;
  ev.type = "llm_call";
  // A typical small event payload (~200 bytes).
  ev.payload_json =
      R"({"turn":3,"model":"gpt-x","prompt_tokens":5123,"completion_tokens":812,)"
      R"("latency_ms":8123.4,"cost_usd":0.0213,"candidate":"3f2a9c...","status":"OK",)"
      R"("note":"refine schedule of the ring allreduce"})";
  for (auto _ : state) {
    auto seq = g_db->store->AppendEvent(ev);
    if (!seq.ok()) {
      state.SkipWithError(std::string(seq.status().message()).c_str());
      break;
    }
    benchmark::DoNotOptimize(*seq);
  }
  // Summed over threads by the library, then divided by the run's wall time
  // (UseRealTime), so items_per_second is the aggregate event rate.
  state.SetItemsProcessed(state.iterations());
}

void BM_AppendOwnJob(benchmark::State& state) { AppendEvents(state, false); }
void BM_AppendSharedJob(benchmark::State& state) { AppendEvents(state, true); }

void Register(const std::string& series, void (*setup)(const benchmark::State&)) {
  struct Variant {
    const char* name;
    void (*fn)(benchmark::State&);
  };
  for (const Variant& v :
       {Variant{"own", BM_AppendOwnJob}, Variant{"shared", BM_AppendSharedJob}}) {
    benchmark::RegisterBenchmark(("AppendEvent/" + series + "/" + v.name).c_str(), v.fn)
        ->Setup(setup)
        ->Teardown(Teardown)
        ->Threads(1)
        ->Threads(kMaxThreads)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
  }
}

}  // namespace
}  // namespace pkforge::storage

int main(int argc, char** argv) {
  using namespace pkforge::storage;  // NOLINT: main only
  benchmark::Initialize(&argc, argv);
  g_disk_base = std::filesystem::temp_directory_path().string();
  Register("disk", SetupDisk);
  if (std::filesystem::is_directory("/dev/shm")) Register("shm", SetupShm);
  benchmark::AddCustomContext("disk_dir", g_disk_base);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

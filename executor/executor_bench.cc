// executor_bench: where the time of one Evaluate goes, and how busy the
// devices stay under load (design section 10; docs/performance.md).
//
//   latency: N sequential evaluations of distinct sources (cache misses) and N
//            of one already-compiled source (cache hits), each timed by the
//            client from the call to the result message, broken into the
//            executor's stages; "overhead" is everything that is neither
//            compile, queue nor the worker's own run time (sandbox start,
//            scratch setup, gRPC, result handling).
//   duty:    1 client and --clients clients submitting distinct sources back
//            to back for --seconds each; how much of the wall time the device
//            lanes ran evaluations, and how much compile time was hidden
//            behind other evaluations' runs.
//
// By default an ExecutorServer runs in this process on an ephemeral loopback
// port and is called over real gRPC, exactly as the orchestrator calls it;
// --executor benchmarks a running pkforge-executor instead.
//
// A plain main(): both modes drive a server concurrently and report
// distributions, which Google Benchmark's per-iteration model does not fit.
#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/net.h"
#include "common/stats.h"
#include "executor/server.h"
#include "executor/testing_candidates.h"
#include "nlohmann/json.hpp"
#include "pkforge/v1/executor.grpc.pb.h"

namespace pkforge::executor {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using Json = nlohmann::ordered_json;

struct Options {
  std::string backend = "host";
  int world_size = 1;
  std::string problem = "allreduce";
  std::string size = "tiny";
  std::string mode = "all";
  int evals = 10;
  int clients = 8;
  double seconds = 30;
  std::string executor;    // empty: in-process
  std::string token_file;  // for --executor off loopback
  int host_slots = ExecutorConfig().host_slots;
  bool json = false;
  bool verbose = false;
};

// One Evaluate as the client saw it. Times are seconds on this process's
// monotonic clock since the benchmark's origin; stage times are the
// executor's own (milliseconds).
struct Sample {
  bool rpc_ok = false;
  std::string rpc_error;
  v1::EvaluationResult::Status status = v1::EvaluationResult::STATUS_UNSPECIFIED;
  std::string message;
  bool cache_hit = false;
  double client_ms = 0;
  double compile_ms = 0, queue_ms = 0, run_ms = 0, server_total_ms = 0;
  double t_call = 0;
  double t_compiled = -1;  // first message after "compiling": the compile ended
  double t_running = -1;   // a device lane was leased
  double t_result = -1;    // the lease was returned just before this
  // The executor's own clock (elapsed_ms since it accepted the call) at the
  // same two messages, to place the overhead without cross-clock error.
  double e_compiled = -1, e_running = -1;
  double overhead_ms() const { return client_ms - compile_ms - queue_ms - run_ms; }
  // Executor-side share of the overhead (sandbox, worker start, result
  // handling) vs. what lies outside the executor's stopwatch (gRPC).
  double server_overhead_ms() const { return server_total_ms - compile_ms - queue_ms - run_ms; }
  double transport_ms() const { return client_ms - server_total_ms; }
  // The executor-side overhead, split: around the compile (scratch folder,
  // compile slot, cache lookup and artifact copy), between compile and lease
  // beyond the queue wait, and around the worker's run (sandbox and worker
  // start-up, teardown, result parsing).
  double around_compile_ms() const { return e_compiled < 0 ? 0 : e_compiled - compile_ms; }
  double handoff_ms() const {
    return e_compiled < 0 || e_running < 0 ? 0 : e_running - e_compiled - queue_ms;
  }
  double around_run_ms() const { return e_running < 0 ? 0 : server_total_ms - e_running - run_ms; }
  bool ok() const { return rpc_ok && status == v1::EvaluationResult::OK; }
};

class Bench {
 public:
  Bench(Options options, std::shared_ptr<grpc::Channel> channel, ExecutorServer* server, int lanes,
        std::vector<int> gpus)
      : o_(std::move(options)),
        channel_(std::move(channel)),
        server_(server),
        lanes_(lanes),
        gpus_(std::move(gpus)),
        origin_(Clock::now()) {
    // A nonce per run keeps sources distinct from every earlier run, so a
    // long-lived --executor's compile cache cannot turn misses into hits.
    std::random_device rd;
    nonce_ = absl::StrFormat("%08x%08x", rd(), rd());
  }

  double Now() const { return std::chrono::duration<double>(Clock::now() - origin_).count(); }

  std::string Source(const std::string& tag, int64_t i) const {
    const char* base =
        o_.backend == "cuda" ? test_candidates::kCudaAllreduce : test_candidates::kAllreduce;
    return absl::StrCat("// executor_bench ", nonce_, " ", tag, " ", i, "\n", base);
  }

  v1::EvaluateRequest Request(const std::string& source, const std::string& client) const {
    v1::EvaluateRequest r;
    r.set_problem(o_.problem);
    r.set_backend(o_.backend == "cuda" ? v1::BACKEND_CUDA : v1::BACKEND_HOST);
    r.set_world_size(o_.world_size);
    r.set_dtype(v1::DTYPE_F32);
    r.mutable_size()->set_preset(o_.size);
    r.set_source(source);
    // trials, iterations and timeout stay 0: the executor's defaults, i.e. the
    // full evaluation (5 trials + timing) the design targets talk about.
    // One fairness group per simulated client, as the orchestrator does per job.
    r.set_client_tag(absl::StrCat(client, " executor_bench"));
    return r;
  }

  Sample Evaluate(v1::Executor::Stub* stub, const v1::EvaluateRequest& req) const {
    Sample s;
    grpc::ClientContext ctx;
    if (!token_.empty()) ctx.AddMetadata("authorization", "Bearer " + token_);
    s.t_call = Now();
    auto reader = stub->Evaluate(&ctx, req);
    v1::EvaluateProgress msg;
    bool compiling = false;
    while (reader->Read(&msg)) {
      const double t = Now();
      if (msg.has_compiling()) {
        compiling = true;
        continue;
      }
      if (compiling && s.t_compiled < 0) {
        s.t_compiled = t;
        s.e_compiled = msg.elapsed_ms();
      }
      if (msg.has_running() && s.t_running < 0) {
        s.t_running = t;
        s.e_running = msg.elapsed_ms();
      }
      if (msg.has_result()) {
        s.t_result = t;
        s.client_ms = (t - s.t_call) * 1e3;
        const v1::EvaluationResult& r = msg.result();
        s.status = r.status();
        s.message = r.message();
        s.cache_hit = r.compile().cache_hit();
        s.compile_ms = r.stages().compile_ms();
        s.queue_ms = r.stages().queue_ms();
        s.run_ms = r.stages().run_ms();
        s.server_total_ms = r.stages().total_ms();
      }
    }
    const grpc::Status st = reader->Finish();
    s.rpc_ok = st.ok() && s.t_result >= 0;
    if (!st.ok())
      s.rpc_error = absl::StrCat(st.error_code(), ": ", st.error_message());
    else if (s.t_result < 0)
      s.rpc_error = "stream ended without a result";
    return s;
  }

  std::unique_ptr<v1::Executor::Stub> NewStub(bool own_connection) const {
    if (!own_connection) return v1::Executor::NewStub(channel_);
    // A private subchannel pool gives each simulated client its own TCP
    // connection, as separate orchestrator processes would have.
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    return v1::Executor::NewStub(grpc::CreateCustomChannel(target_, creds_, args));
  }

  void SetTarget(std::string target, std::shared_ptr<grpc::ChannelCredentials> creds,
                 std::string token) {
    target_ = std::move(target);
    creds_ = std::move(creds);
    token_ = std::move(token);
  }

  Json Latency();
  Json Duty(int clients);

 private:
  double BusySeconds() const;
  void Log(const std::string& line) const {
    // Progress lines overwrite themselves: only worth printing on a terminal.
    if (isatty(STDERR_FILENO)) std::cerr << line << std::flush;
  }

  Options o_;
  std::shared_ptr<grpc::Channel> channel_;
  ExecutorServer* server_;  // null with --executor
  int lanes_;               // evaluations the executor can run at once
  std::vector<int> gpus_;
  Clock::time_point origin_;
  std::string nonce_;
  std::string target_, token_;
  std::shared_ptr<grpc::ChannelCredentials> creds_;
};

double Mean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double s = 0;
  for (double x : v) s += x;
  return s / v.size();
}

template <typename F>
std::vector<double> Column(const std::vector<Sample>& samples, F f) {
  std::vector<double> out;
  for (const Sample& s : samples)
    if (s.ok()) out.push_back(f(s));
  return out;
}

std::string Failures(const std::vector<Sample>& samples) {
  std::map<std::string, int> by_reason;
  for (const Sample& s : samples) {
    if (s.ok()) continue;
    by_reason[s.rpc_ok ? absl::StrCat(v1::EvaluationResult::Status_Name(s.status), ": ",
                                      s.message.substr(0, 160))
                       : absl::StrCat("rpc ", s.rpc_error.substr(0, 160))]++;
  }
  std::string out;
  for (const auto& [reason, n] : by_reason) absl::StrAppend(&out, "    ", n, "x ", reason, "\n");
  return out;
}

Json LatencyCase(const std::string& name, const std::vector<Sample>& samples) {
  struct Col {
    const char* key;
    std::function<double(const Sample&)> f;
  };
  const std::vector<Col> cols = {
      {"client_total_ms", [](const Sample& s) { return s.client_ms; }},
      {"compile_ms", [](const Sample& s) { return s.compile_ms; }},
      {"queue_ms", [](const Sample& s) { return s.queue_ms; }},
      {"run_ms", [](const Sample& s) { return s.run_ms; }},
      {"overhead_ms", [](const Sample& s) { return s.overhead_ms(); }},
      {"executor_overhead_ms", [](const Sample& s) { return s.server_overhead_ms(); }},
      {"transport_ms", [](const Sample& s) { return s.transport_ms(); }},
      {"around_compile_ms", [](const Sample& s) { return s.around_compile_ms(); }},
      {"handoff_ms", [](const Sample& s) { return s.handoff_ms(); }},
      {"around_run_ms", [](const Sample& s) { return s.around_run_ms(); }},
  };
  Json j;
  j["case"] = name;
  j["evaluations"] = samples.size();
  int ok = 0, hits = 0;
  for (const Sample& s : samples) {
    ok += s.ok();
    hits += s.ok() && s.cache_hit;
  }
  j["ok"] = ok;
  j["cache_hits"] = hits;
  for (const Col& c : cols) {
    const std::vector<double> v = Column(samples, c.f);
    j[c.key] = {{"median", Quantile(v, 0.5)},
                {"p90", Quantile(v, 0.9)},
                {"max", v.empty() ? 0 : *std::max_element(v.begin(), v.end())}};
  }
  const double total = j["client_total_ms"]["median"].get<double>();
  j["overhead_over_total"] = total > 0 ? j["overhead_ms"]["median"].get<double>() / total : 0;
  // Each evaluation in order, so outliers can be placed (first call, GC...).
  Json each = Json::array();
  for (const Sample& s : samples)
    each.push_back({{"ok", s.ok()},
                    {"cache_hit", s.cache_hit},
                    {"client_ms", s.client_ms},
                    {"compile_ms", s.compile_ms},
                    {"queue_ms", s.queue_ms},
                    {"run_ms", s.run_ms},
                    {"overhead_ms", s.overhead_ms()}});
  j["each"] = each;
  j["failures"] = Failures(samples);
  return j;
}

Json Bench::Latency() {
  auto stub = NewStub(false);
  // One unreported evaluation first: the first call pays one-time costs
  // (connection, page cache of the worker and compiler) that no later
  // evaluation of a running executor pays.
  Log("latency: warm-up evaluation\n");
  const Sample warm = Evaluate(stub.get(), Request(Source("warmup", 0), "latency"));
  if (!warm.ok()) Log(absl::StrCat("latency: warm-up failed: ", Failures({warm})));

  std::vector<Sample> miss, hit;
  for (int i = 0; i < o_.evals; ++i) {
    Log(absl::StrCat("latency: miss ", i + 1, "/", o_.evals, "\r"));
    miss.push_back(Evaluate(stub.get(), Request(Source("miss", i), "latency")));
  }
  // The first miss source is compiled now: every one of these is a hit
  // (reported as cache_hits, not assumed).
  const std::string same = Source("miss", 0);
  for (int i = 0; i < o_.evals; ++i) {
    Log(absl::StrCat("latency: hit  ", i + 1, "/", o_.evals, "\r"));
    hit.push_back(Evaluate(stub.get(), Request(same, "latency")));
  }
  Log("\n");
  Json j;
  j["cases"] = {LatencyCase("cache miss", miss), LatencyCase("cache hit", hit)};
  j["first_evaluation"] = {{"ok", warm.ok()},
                           {"client_ms", warm.client_ms},
                           {"compile_ms", warm.compile_ms},
                           {"run_ms", warm.run_ms},
                           {"overhead_ms", warm.overhead_ms()}};
  return j;
}

double Bench::BusySeconds() const {
  if (server_ == nullptr) return -1;
  if (o_.backend == "host")
    return server_->metrics().Get("pkforge_executor_host_busy_seconds_total");
  double s = 0;
  for (int g : gpus_)
    s += server_->metrics().Get("pkforge_executor_gpu_busy_seconds_total",
                                absl::StrCat("gpu=\"", g, "\""));
  return s;
}

// Of all compile time, the share during which the device lanes were busy
// with other evaluations, weighted by how many lanes were busy (with one lane
// this is "the device stayed busy"; with 8 GPUs, one busy GPU hides 1/8 of a
// compile). Lanes count as busy from the lease (the "running" message) to the
// result message: that is when no other evaluation can have them.
double HiddenCompileFraction(const std::vector<Sample>& samples, int lanes) {
  struct Iv {
    double a, b;
  };
  std::vector<Iv> busy;
  for (const Sample& s : samples)
    if (s.t_running >= 0 && s.t_result >= s.t_running) busy.push_back({s.t_running, s.t_result});
  double compile_total = 0, hidden = 0;
  for (const Sample& s : samples) {
    if (s.t_compiled < 0 || s.compile_ms <= 0) continue;
    const double b = s.t_compiled, a = b - s.compile_ms / 1e3;
    compile_total += b - a;
    std::vector<double> cuts = {a, b};
    for (const Iv& iv : busy) {
      if (iv.b <= a || iv.a >= b) continue;
      if (iv.a > a) cuts.push_back(iv.a);
      if (iv.b < b) cuts.push_back(iv.b);
    }
    std::sort(cuts.begin(), cuts.end());
    for (size_t k = 0; k + 1 < cuts.size(); ++k) {
      const double mid = (cuts[k] + cuts[k + 1]) / 2;
      int n = 0;
      for (const Iv& iv : busy) n += iv.a <= mid && mid < iv.b;
      hidden += (cuts[k + 1] - cuts[k]) * std::min(n, lanes) / double(lanes);
    }
  }
  return compile_total > 0 ? hidden / compile_total : 0;
}

Json Bench::Duty(int clients) {
  const double busy_before = BusySeconds();
  std::vector<std::vector<Sample>> per_client(clients);
  std::atomic<int> done{0};
  const double t0 = Now(), deadline = t0 + o_.seconds;
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c)
    threads.emplace_back([&, c] {
      auto stub = NewStub(true);
      const std::string tag = absl::StrCat("duty", clients, "_c", c);
      for (int64_t i = 0; Now() < deadline; ++i) {
        per_client[c].push_back(Evaluate(stub.get(), Request(Source(tag, i), tag)));
        ++done;
      }
    });
  while (Now() < deadline) {
    Log(absl::StrFormat("duty, %d client(s): %.0f/%.0f s, %d evaluations\r", clients, Now() - t0,
                        o_.seconds, done.load()));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  Log(absl::StrFormat("duty, %d client(s): draining %d in flight...            \r", clients,
                      clients));
  for (auto& t : threads) t.join();
  Log("\n");
  std::vector<Sample> all;
  for (auto& v : per_client) all.insert(all.end(), v.begin(), v.end());
  // Wall runs to the last result: every counted run lies inside it.
  double t_end = t0;
  for (const Sample& s : all) t_end = std::max(t_end, s.t_call + s.client_ms / 1e3);
  const double wall = t_end - t0;

  Json j;
  j["clients"] = clients;
  j["lanes"] = lanes_;
  j["wall_s"] = wall;
  int ok = 0, hits = 0;
  double run_s = 0;
  for (const Sample& s : all) {
    ok += s.ok();
    hits += s.ok() && s.cache_hit;
    // Failed evaluations occupied the device too.
    if (s.rpc_ok) run_s += s.run_ms / 1e3;
  }
  j["evaluations"] = all.size();
  j["ok"] = ok;
  j["cache_hits"] = hits;
  j["evaluations_per_min"] = wall > 0 ? all.size() * 60.0 / wall : 0;
  j["busy_fraction_run_ms"] = wall > 0 ? run_s / (wall * lanes_) : 0;
  if (busy_before >= 0) {
    // The executor's counter runs from lease to release (sandbox start and
    // result parsing included); for cuda it is per GPU, so its capacity is
    // lanes x world_size GPU-seconds per second.
    const double per_lane_units = o_.backend == "cuda" ? o_.world_size : 1;
    j["busy_fraction_executor_counter"] =
        wall > 0 ? (BusySeconds() - busy_before) / (wall * lanes_ * per_lane_units) : 0;
  } else {
    j["busy_fraction_executor_counter"] = nullptr;
  }
  j["mean_client_ms"] = Mean(Column(all, [](const Sample& s) { return s.client_ms; }));
  j["mean_compile_ms"] = Mean(Column(all, [](const Sample& s) { return s.compile_ms; }));
  j["mean_queue_ms"] = Mean(Column(all, [](const Sample& s) { return s.queue_ms; }));
  j["mean_run_ms"] = Mean(Column(all, [](const Sample& s) { return s.run_ms; }));
  j["mean_overhead_ms"] = Mean(Column(all, [](const Sample& s) { return s.overhead_ms(); }));
  j["mean_around_compile_ms"] =
      Mean(Column(all, [](const Sample& s) { return s.around_compile_ms(); }));
  j["mean_around_run_ms"] = Mean(Column(all, [](const Sample& s) { return s.around_run_ms(); }));
  j["compile_hidden_fraction"] = HiddenCompileFraction(all, lanes_);
  j["failures"] = Failures(all);
  return j;
}

// Rounded milliseconds; tiny negative differences of two clocks print as 0.
std::string Ms(double v) { return absl::StrFormat("%.0f", std::abs(v) < 0.5 ? 0.0 : v); }

void PrintLatency(const Json& lat) {
  std::printf("\n== Latency of one Evaluate (sequential, 1 client; ms, median / p90) ==\n");
  std::printf("%-11s %5s %5s %13s %13s %13s %13s %13s %9s   %13s %13s\n", "case", "ok", "hits",
              "client total", "compile", "queue", "run", "overhead", "ovh/total", "in executor",
              "gRPC+client");
  for (const Json& c : lat["cases"]) {
    auto cell = [&](const char* k) {
      return Ms(c[k]["median"].get<double>()) + " / " + Ms(c[k]["p90"].get<double>());
    };
    std::printf("%-11s %5d %5d %13s %13s %13s %13s %13s %8.1f%%   %13s %13s\n",
                c["case"].get<std::string>().c_str(), c["ok"].get<int>(),
                c["cache_hits"].get<int>(), cell("client_total_ms").c_str(),
                cell("compile_ms").c_str(), cell("queue_ms").c_str(), cell("run_ms").c_str(),
                cell("overhead_ms").c_str(), 100 * c["overhead_over_total"].get<double>(),
                cell("executor_overhead_ms").c_str(), cell("transport_ms").c_str());
  }
  const Json& first = lat["first_evaluation"];
  std::printf(
      "  first evaluation of this run (not in the table): %s ms (compile %s, run %s, "
      "overhead %s)\n",
      Ms(first["client_ms"].get<double>()).c_str(), Ms(first["compile_ms"].get<double>()).c_str(),
      Ms(first["run_ms"].get<double>()).c_str(), Ms(first["overhead_ms"].get<double>()).c_str());
  for (const Json& c : lat["cases"]) {
    std::printf("  %s: max client total %s ms, max overhead %s ms (target: overhead < 300 ms)\n",
                c["case"].get<std::string>().c_str(),
                Ms(c["client_total_ms"]["max"].get<double>()).c_str(),
                Ms(c["overhead_ms"]["max"].get<double>()).c_str());
    if (!c["failures"].get<std::string>().empty())
      std::printf("  %s failures:\n%s", c["case"].get<std::string>().c_str(),
                  c["failures"].get<std::string>().c_str());
  }
  std::printf(
      "  overhead = client total - compile - queue - run (run: the worker's own wall\n"
      "  time); \"in executor\" = executor total - stages, \"gRPC+client\" = the rest.\n");
  std::printf(
      "  executor overhead split (median ms): around compile (scratch, slot, cache) /\n"
      "  compile->lease beyond queue / around the worker run (sandbox, start, parse):\n");
  for (const Json& c : lat["cases"])
    std::printf("    %-11s %6s / %6s / %6s\n", c["case"].get<std::string>().c_str(),
                Ms(c["around_compile_ms"]["median"].get<double>()).c_str(),
                Ms(c["handoff_ms"]["median"].get<double>()).c_str(),
                Ms(c["around_run_ms"]["median"].get<double>()).c_str());
}

void PrintDuty(const std::vector<Json>& runs) {
  std::printf("\n== Duty cycle: clients submitting distinct sources back to back ==\n");
  std::printf("%-40s", "");
  for (const Json& r : runs)
    std::printf(" %14s", absl::StrCat(r["clients"].get<int>(), " client(s)").c_str());
  std::printf("\n");
  auto row = [&](const char* label, auto f) {
    std::printf("%-40s", label);
    for (const Json& r : runs) std::printf(" %14s", f(r).c_str());
    std::printf("\n");
  };
  auto num = [](const char* k, int decimals) {
    return [k, decimals](const Json& r) {
      return r[k].is_null() ? std::string("n/a")
                            : absl::StrFormat("%.*f", decimals, r[k].get<double>());
    };
  };
  row("wall (s)", num("wall_s", 1));
  row("evaluations (ok)", [](const Json& r) {
    return absl::StrCat(r["evaluations"].get<int>(), " (", r["ok"].get<int>(), ")");
  });
  row("evaluations / min", num("evaluations_per_min", 1));
  row("device busy: sum run_ms / (wall x lanes)", [](const Json& r) {
    return absl::StrFormat("%.1f%%", 100 * r["busy_fraction_run_ms"].get<double>());
  });
  row("device busy: executor busy counter", [](const Json& r) {
    return r["busy_fraction_executor_counter"].is_null()
               ? std::string("n/a")
               : absl::StrFormat("%.1f%%", 100 * r["busy_fraction_executor_counter"].get<double>());
  });
  row("compile time hidden behind runs", [](const Json& r) {
    return absl::StrFormat("%.1f%%", 100 * r["compile_hidden_fraction"].get<double>());
  });
  row("mean compile (ms)", num("mean_compile_ms", 0));
  row("mean queue (ms)", num("mean_queue_ms", 0));
  row("mean run (ms)", num("mean_run_ms", 0));
  row("mean overhead (ms)", num("mean_overhead_ms", 0));
  row("  of which around compile (ms)", num("mean_around_compile_ms", 0));
  row("  of which around the worker run (ms)", num("mean_around_run_ms", 0));
  row("mean client total (ms)", num("mean_client_ms", 0));
  for (const Json& r : runs)
    if (!r["failures"].get<std::string>().empty())
      std::printf("  failures with %d client(s):\n%s", r["clients"].get<int>(),
                  r["failures"].get<std::string>().c_str());
  std::printf(
      "  lanes = evaluations the executor runs at once (host: host_slots; cuda: usable\n"
      "  GPUs / world size). Busy counter: lease to release, n/a with --executor.\n");
}

// pkforge-worker is found next to a relocated build tree's bin/ first (a
// bundle), else in the build tree this binary was built in.
std::string SelfExeForTools() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path sibling = self.parent_path().parent_path() / "bin" / "pkforge-worker";
    if (access(sibling.c_str(), X_OK) == 0)
      return (sibling.parent_path() / "pkforge-executor").string();
  }
  return std::string(PKFORGE_BIN_DIR) + "/pkforge-executor";
}

int Main(int argc, char** argv) {
  Options o;
  CLI::App app{"pkforge executor benchmark: latency breakdown of Evaluate and device duty cycle"};
  app.add_option("--backend", o.backend, "host | cuda")->check(CLI::IsMember({"host", "cuda"}));
  app.add_option("--world-size", o.world_size, "ranks per evaluation")->check(CLI::PositiveNumber);
  app.add_option("--problem", o.problem, "problem (the candidates are allreduce)")
      ->check(CLI::IsMember({"allreduce"}));
  app.add_option("--size", o.size, "size preset")->check(CLI::IsMember({"tiny", "default", "large"}));
  app.add_option("--mode", o.mode, "latency | duty | all")
      ->check(CLI::IsMember({"latency", "duty", "all"}));
  app.add_option("--evals", o.evals, "evaluations per latency case")->check(CLI::PositiveNumber);
  app.add_option("--clients", o.clients, "concurrent clients in the duty run (compared with 1)")
      ->check(CLI::PositiveNumber);
  app.add_option("--seconds", o.seconds, "duration of each duty run")->check(CLI::PositiveNumber);
  app.add_option("--executor", o.executor, "HOST:PORT of a running executor (default: in-process)");
  app.add_option("--token-file", o.token_file, "bearer token for --executor");
  app.add_option("--host-slots", o.host_slots,
                 "host evaluations at once (in-process executor; assumed for --executor)")
      ->check(CLI::PositiveNumber);
  app.add_flag("--json", o.json, "print one JSON document instead of tables");
  app.add_flag("--verbose", o.verbose, "executor logs at info level");
  CLI11_PARSE(app, argc, argv);
  std::vector<std::string> args(argv, argv + argc);
  const std::string command_line = absl::StrJoin(args, " ");
  spdlog::set_level(o.verbose ? spdlog::level::info : spdlog::level::warn);
  const bool cuda = o.backend == "cuda";

  // --- the executor under test
  std::unique_ptr<ExecutorServer> server;
  std::string temp_dir, sandbox_root, target, token;
  // Every exit path stops the in-process executor and removes its data,
  // including the sandbox root the executor may have put outside data_dir
  // (/tmp/pkforge-executor-<hash>, when data_dir is not traversable by the
  // candidate uid, as a mkdtemp folder is not).
  struct Cleanup {
    std::unique_ptr<ExecutorServer>* server;
    std::vector<std::string*> dirs;
    ~Cleanup() {
      if (*server) (*server)->Shutdown(5);
      server->reset();
      for (const std::string* d : dirs) {
        std::error_code ec;
        if (!d->empty()) fs::remove_all(*d, ec);
      }
    }
  } cleanup{&server, {&temp_dir, &sandbox_root}};
  if (o.executor.empty()) {
    char tmpl[] = "/tmp/pkf_executor_bench_XXXXXX";
    if (mkdtemp(tmpl) == nullptr) {
      std::perror("mkdtemp");
      return 1;
    }
    temp_dir = tmpl;
    ExecutorConfig c;
    c.listen = "127.0.0.1:0";
    c.data_dir = temp_dir + "/data";
    c.gpus = cuda ? "all" : "none";
    if (!cuda) c.nvcc = "none";  // the host backend never uses it; spares a probe
    c.measure_ceilings = false;
    c.host_slots = o.host_slots;
    if (absl::Status st = Finalize(&c, SelfExeForTools()); !st.ok()) {
      std::cerr << "executor config: " << st << "\n";
      return 1;
    }
    if (auto root = SandboxRoot(c); root.ok() && !absl::StartsWith(*root, temp_dir))
      sandbox_root = *root;
    auto started = ExecutorServer::Start(c);
    if (!started.ok()) {
      std::cerr << "executor start: " << started.status() << "\n";
      return 1;
    }
    server = *std::move(started);
    target = server->address();
  } else {
    target = o.executor;
    if (!o.token_file.empty()) {
      auto t = ReadTokenFile(o.token_file, TokenRole::kSend, "--token-file");
      if (!t.ok()) {
        std::cerr << t.status() << "\n";
        return 1;
      }
      token = *t;
    }
  }
  auto creds = grpc::InsecureChannelCredentials();
  auto channel = grpc::CreateChannel(target, creds);

  // Lanes and GPUs as the executor itself reports them (works for --executor).
  v1::DeviceInfo info;
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
    grpc::Status st = v1::Executor::NewStub(channel)->DescribeDevice(&ctx, {}, &info);
    if (!st.ok()) {
      std::cerr << "DescribeDevice at " << target << ": " << st.error_message() << "\n";
      return 1;
    }
  }
  std::vector<int> gpus;
  for (const auto& g : info.gpus())
    if (g.healthy()) gpus.push_back(g.index());
  const int lanes = cuda ? info.usable_gpus() / o.world_size : o.host_slots;
  if (lanes < 1) {
    std::cerr << "the executor at " << target << " has " << info.usable_gpus()
              << " usable GPU(s): cannot run world size " << o.world_size << " on cuda\n";
    return 1;
  }

  Bench bench(o, channel, server.get(), lanes, gpus);
  bench.SetTarget(target, creds, token);

  Json out;
  out["command"] = command_line;
  out["bench_host_cores"] = std::thread::hardware_concurrency();
  out["executor"] = o.executor.empty() ? "in-process" : o.executor;
  out["executor_cpu_cores"] = info.cpu_cores();
  out["executor_gpus"] = info.gpus_size();
  if (info.gpus_size() > 0) out["gpu_name"] = info.gpus(0).name();
  out["backend"] = o.backend;
  out["world_size"] = o.world_size;
  out["size"] = o.size;
  out["lanes"] = lanes;
  if (o.mode == "latency" || o.mode == "all") out["latency"] = bench.Latency();
  if (o.mode == "duty" || o.mode == "all") {
    std::vector<Json> runs = {bench.Duty(1)};
    if (o.clients != 1) runs.push_back(bench.Duty(o.clients));
    out["duty"] = runs;
  }

  if (o.json) {
    std::cout << out.dump(2) << "\n";
  } else {
    std::printf("command: %s\n", command_line.c_str());
    const std::string gpu_name =
        info.gpus_size() > 0 ? absl::StrCat(" (", info.gpus(0).name(), ")") : "";
    std::printf(
        "machine: %u cores here; executor %s with %d cores, %d GPU(s)%s; backend %s, "
        "world size %d, size %s, %d lane(s)\n",
        std::thread::hardware_concurrency(), out["executor"].get<std::string>().c_str(),
        info.cpu_cores(), info.gpus_size(), gpu_name.c_str(), o.backend.c_str(), o.world_size,
        o.size.c_str(), lanes);
    if (out.contains("latency")) PrintLatency(out["latency"]);
    if (out.contains("duty")) PrintDuty(out["duty"].get<std::vector<Json>>());
  }

  return 0;
}

}  // namespace
}  // namespace pkforge::executor

int main(int argc, char** argv) { return pkforge::executor::Main(argc, argv); }

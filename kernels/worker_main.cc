// pkforge-worker: the trusted evaluation harness (kernels/README.md).
//   launch  the judge: evaluates one compiled candidate, prints the result
//   list    the problem registry (what the executor serves as ListProblems)
//   bench   harness benchmark: identical candidates, repeated evaluations
//   rank    internal: one rank process, started only by `launch`
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "CLI/CLI.hpp"
#include "fmt/format.h"
#include "common/cpu_latency.h"
#include "common/stats.h"
#include "common/version.h"
#include "google/protobuf/util/json_util.h"
#include "kernels/harness/result_frame.h"
#include "kernels/harness/judge.h"
#include "kernels/harness/problem.h"
#include "kernels/harness/problem_info.h"
#include "kernels/harness/rank.h"
#include "kernels/harness/rank_flags.h"
#include "kernels/harness/shape_family.h"
#include "kernels/harness/size_eval.h"
#include "pkforge/v1/common.pb.h"

namespace {

using namespace pkforge::kernels;  // NOLINT: binary entry point

int List(bool json) {
  pkforge::v1::ListProblemsRequest request;
  request.set_include_reference_source(true);
  auto listed = DescribeProblems(request);
  if (!listed.ok()) {
    fmt::print(stderr, "pkforge-worker list: {}\n", std::string(listed.status().message()));
    return 2;
  }
  const pkforge::v1::ListProblemsResponse& resp = *listed;
  if (json) {
    std::string out;
    (void)google::protobuf::util::MessageToJsonString(resp, &out);
    std::cout << out << "\n";
  } else {
    for (const auto& p : resp.problems())
      fmt::print("{:<20} {:<11} dims {}\n", p.name(), p.category(),
                 fmt::format("{}", fmt::join(p.dims(), ",")));
  }
  return 0;
}

struct BenchOptions {
  std::string backend = "cuda";
  std::string candidates;  // folder with ref_cuda_<p>.so (cuda) / naive_host_<p>.so (host)
  std::vector<std::string> problems;
  std::string size = "default";
  std::string dtype = "bf16";
  int world_size = 1;
  int repeats = 20;
  bool json = false;
  bool positions = false;
  bool precise_timing = false;  // cuda: 2 GiB of input sets (LaunchOptions)
};

using pkforge::Quantile;

// Why --precise-timing cannot be honoured (empty: it can), for launch and
// bench alike (eval_validation.cc says the same to API clients).
std::string PreciseTimingRefusal(bool precise, const std::string& backend, bool skip_timing) {
  if (!precise) return "";
  if (backend != "cuda")
    return "--precise-timing: needs --backend cuda (host timings are CPU timings, their "
           "batches already sized by time)";
  if (skip_timing) return "--precise-timing: needs timing (--skip-timing is set)";
  return "";
}

// The harness benchmark (issue 4): per problem, `repeats` full evaluations
// (default protocol: 5 trials, warm-up, 30 timed iterations) of the
// reference's own code as the candidate. Reports the wall time of one
// evaluation, the identical-candidate speedup (median, p95 of |speedup - 1|,
// min, max) and the reference's median time, bus bandwidth and % of roofline.
int Bench(const BenchOptions& b) {
  if (const std::string why = PreciseTimingRefusal(b.precise_timing, b.backend, false);
      !why.empty()) {
    fmt::print(stderr, "pkforge-worker bench: {}\n", why);
    return 2;
  }
  std::vector<std::string> names = b.problems;
  if (names.empty())
    for (const Problem* p : Problems()) names.emplace_back(p->name);
  int failures = 0;
  const pkforge::CpuWakeLatencyHold wake = pkforge::CpuWakeLatencyHold::AcquireUnlessDisabled();
  fmt::print(stderr, "cpu wake-up latency: {}\n", wake.detail());
  if (!b.json)
    fmt::print("{:<20} {:>7} {:>9} {:>9} {:>8} {:>8} {:>11} {:>10} {:>8}\n", "problem", "eval_s",
               "speedup", "p95|s-1|", "min", "max", "ref_us", "busbw_GB/s", "roof_%");
  for (const std::string& name : names) {
    LaunchOptions lo;
    lo.problem = name;
    lo.backend = b.backend;
    lo.world_size = b.world_size;
    lo.dtype = b.dtype;
    lo.size = b.size;
    lo.precise_timing = b.precise_timing;
    lo.candidate = fmt::format("{}/{}_{}.so", b.candidates,
                               b.backend == "cuda" ? "ref_cuda" : "naive_host", name);
    std::vector<double> secs, speedups, ref_us, busbw, roof;
    // Timed samples by position in the ABBA pair: iteration k runs the
    // reference first when k is even ([0] first, [1] second).
    std::vector<double> ref_pos[2], cand_pos[2];
    int not_ok = 0;
    std::string last_error;
    for (int i = 0; i < b.repeats; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      auto r = Evaluate(lo);
      secs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      if (!r.ok()) {
        fmt::print(stderr, "pkforge-worker bench: {}: {}\n", name, std::string(r.status().message()));
        return 2;
      }
      if (r->status() != pkforge::v1::EvaluationResult::OK) {
        ++not_ok;
        last_error = r->message();
        continue;
      }
      speedups.push_back(r->speedup());
      // [0]: the side ran first in its pair, [1]: second (first_in_pair).
      for (int k = 0; k < r->reference().samples_us_size() && k < r->reference().first_in_pair_size(); ++k)
        ref_pos[r->reference().first_in_pair(k) ? 0 : 1].push_back(r->reference().samples_us(k));
      for (int k = 0; k < r->candidate().samples_us_size() && k < r->candidate().first_in_pair_size(); ++k)
        cand_pos[r->candidate().first_in_pair(k) ? 0 : 1].push_back(r->candidate().samples_us(k));
      ref_us.push_back(r->reference().median_us());
      busbw.push_back(r->roofline().reference_bus_gbps());
      roof.push_back(100 * r->roofline().reference_fraction());
    }
    std::vector<double> dev;
    for (double x : speedups) dev.push_back(std::fabs(x - 1));
    const double eval_s = Quantile(secs, 0.5), sp = Quantile(speedups, 0.5),
                 p95 = Quantile(dev, 0.95);
    const double mn = speedups.empty() ? 0 : *std::min_element(speedups.begin(), speedups.end());
    const double mx = speedups.empty() ? 0 : *std::max_element(speedups.begin(), speedups.end());
    if (not_ok > 0) ++failures;
    if (b.json) {
      fmt::print("{{\"problem\":\"{}\",\"backend\":\"{}\",\"world_size\":{},\"size\":\"{}\","
                 "\"dtype\":\"{}\",\"repeats\":{},\"not_ok\":{},\"eval_s_median\":{:.3f},"
                 "\"speedup_median\":{:.4f},\"speedup_p95_abs_dev\":{:.4f},\"speedup_min\":{:.4f},"
                 "\"speedup_max\":{:.4f},\"reference_median_us\":{:.2f},"
                 "\"reference_bus_gbps\":{:.1f},\"reference_roofline_pct\":{:.1f}}}\n",
                 name, b.backend, b.world_size, b.size, b.dtype, b.repeats, not_ok, eval_s, sp, p95,
                 mn, mx, Quantile(ref_us, 0.5), Quantile(busbw, 0.5), Quantile(roof, 0.5));
    } else {
      fmt::print("{:<20} {:>7.2f} {:>9.4f} {:>9.4f} {:>8.3f} {:>8.3f} {:>11.1f} {:>10.1f} {:>8.1f}{}\n",
                 name, eval_s, sp, p95, mn, mx, Quantile(ref_us, 0.5), Quantile(busbw, 0.5),
                 Quantile(roof, 0.5),
                 not_ok ? fmt::format("  ({} of {} not OK: {})", not_ok, b.repeats, last_error) : "");
    }
    if (b.positions && !ref_pos[0].empty() && !ref_pos[1].empty()) {
      // Pooled medians over every evaluation: a side that is slower only
      // when it runs second (or first) points at state the other side or the
      // input refresh leaves behind, not at the code.
      const double rf = Quantile(ref_pos[0], 0.5), rs = Quantile(ref_pos[1], 0.5),
                   cf = Quantile(cand_pos[0], 0.5), cs = Quantile(cand_pos[1], 0.5);
      fmt::print("{:<20} by position (us): ref first {:.2f}, ref second {:.2f} | cand first {:.2f}, "
                 "cand second {:.2f} | ref first / cand second {:.3f}, ref second / cand first "
                 "{:.3f}\n",
                 "", rf, rs, cf, cs, rf / cs, rs / cf);
    }
    fflush(stdout);
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"pkforge-worker: trusted multi-rank kernel evaluation harness"};
  app.set_version_flag("--version", "pkforge-worker " + pkforge::VersionString());
  app.require_subcommand(1);

  LaunchOptions lo;
  bool json = false;
  auto* launch = app.add_subcommand("launch", "evaluate a compiled candidate");
  launch->add_option("--problem", lo.problem, "problem name")->required();
  launch->add_option("--backend", lo.backend, "host|cuda")->check(CLI::IsMember({"host", "cuda"}));
  launch->add_option("--world-size", lo.world_size, "ranks")->required();
  launch->add_option("--dtype", lo.dtype, "bf16|f16|f32")->check(CLI::IsMember({"bf16", "f16", "f32"}));
  launch->add_option("--size", lo.size, "tiny|default|large|K=V,...");
  launch->add_option("--trials", lo.trials, "correctness trials");
  launch->add_option("--warmup", lo.warmup, "warm-up iterations per side");
  launch->add_option("--iters", lo.iters, "timed iterations per side");
  launch->add_option("--timeout", lo.timeout_s, "seconds per phase");
  launch->add_flag("--json", json, "print the result as proto3 JSON");
  bool result_key_stdin = false;
  launch->add_flag("--result-key-stdin", result_key_stdin,
                   "read a key (hex) from stdin first; print the result as one framed, "
                   "authenticated record (harness/result_frame.h; what the executor uses)");
  launch->add_option("--forbid", lo.forbid, "extra forbidden calls for the static scan")->delimiter(',');
  launch->add_option("--outlive-delay-ms", lo.outlive_delay_ms, "delay before re-reading outputs");
  launch->add_option("--reveal-seeds-after", lo.reveal_seeds_file,
                     "tests only: write the seeds here once every rank process is gone");
  launch->add_flag("--skip-timing", lo.skip_timing, "correctness trials only");
  launch->add_flag("--precise-timing", lo.precise_timing,
                   "cuda: measurement-grade timing, 2 GiB of input sets per side and GPU instead "
                   "of 512 MiB (longer batches of short calls; ~2.5x the evaluation time)");
  launch->add_option("--candidate-writable", lo.candidate_writable,
                     "a folder host candidates may write beneath (repeatable; none by default)");
  launch->add_option("--hbm-gbps", lo.hbm_gbps, "measured HBM ceiling (GB/s) for the roofline");
  launch->add_option("--link-gbps", lo.link_gbps, "measured interconnect ceiling (GB/s per GPU)");
  launch->add_option("--tflops", lo.tflops, "measured compute ceiling (TFLOP/s)");
  SizeOptions so;
  std::string size_ladder;
  launch->add_flag("--hidden-shapes", so.hidden_shapes,
                   "evaluate on dims drawn from the problem's shape family with a secret seed "
                   "(around --size), named only in the result");
  launch->add_option("--sizes", size_ladder,
                     "size ladder, e.g. tiny,default,large: evaluate at each and report the "
                     "geometric mean of the speedups (multi_size_score)");
  launch->add_option("candidate", lo.candidate, "compiled candidate (.so)")->required();

  RankOptions ro;
  auto* rank = app.add_subcommand("rank", "internal: one rank process (started by launch)");
  pkforge::kernels::AddRankFlags(rank, &ro);

  bool list_json = false, list_markdown = false;
  auto* list = app.add_subcommand("list", "print the problem registry");
  list->add_flag("--json", list_json, "proto3 JSON of ListProblemsResponse");
  list->add_flag("--markdown", list_markdown, "the problem table of kernels/README.md");

  BenchOptions bo;
  auto* bench = app.add_subcommand("bench", "benchmark the harness with identical candidates");
  bench->add_option("--backend", bo.backend, "host|cuda")->check(CLI::IsMember({"host", "cuda"}));
  bench->add_option("--candidates", bo.candidates,
                    "folder with ref_cuda_<problem>.so (cuda) or naive_host_<problem>.so (host)")
      ->required();
  bench->add_option("--problems", bo.problems, "comma-separated (default: all)")->delimiter(',');
  bench->add_option("--size", bo.size, "tiny|default|large|K=V,...");
  bench->add_option("--dtype", bo.dtype, "bf16|f16|f32")->check(CLI::IsMember({"bf16", "f16", "f32"}));
  bench->add_option("--world-size", bo.world_size, "ranks");
  bench->add_option("--repeats", bo.repeats, "evaluations per problem");
  bench->add_flag("--json", bo.json, "one JSON object per problem");
  bench->add_flag("--precise-timing", bo.precise_timing,
                  "cuda: measurement-grade timing (2 GiB of input sets per side and GPU)");
  bench->add_flag("--positions", bo.positions,
                  "also print median times by position in the ABBA pair (diagnostic)");

  CLI11_PARSE(app, argc, argv);
  if (*bench) return Bench(bo);
  if (*rank) return RankMain(ro);
  if (*list && list_markdown) {
    std::cout << ProblemTableMarkdown();
    return 0;
  }
  if (*list) return List(list_json);
  std::string key;
  if (result_key_stdin) {
    // Before any rank exists (the stdin pipe is empty once we have read it).
    std::getline(std::cin, key);
    if (key.size() < 32) {
      fmt::print(stderr, "pkforge-worker: --result-key-stdin: no key on stdin\n");
      return 2;
    }
  }
  if (const std::string why = PreciseTimingRefusal(lo.precise_timing, lo.backend, lo.skip_timing);
      !why.empty()) {
    fmt::print(stderr, "pkforge-worker: {}\n", why);
    return 2;
  }
  if (!size_ladder.empty()) {
    auto ladder = ParseSizeLadder(size_ladder);
    if (!ladder.ok()) {
      fmt::print(stderr, "pkforge-worker: --sizes: {}\n", std::string(ladder.status().message()));
      return 2;
    }
    so.size_ladder = *std::move(ladder);
  }
  // The CPUs out of deep idle states while both sides are timed (a stopped
  // candidate's CPU idles longest: common/cpu_latency.h). Best effort: a
  // judge in the executor's sandbox cannot open the device; the executor
  // holds its own.
  const pkforge::CpuWakeLatencyHold wake = pkforge::CpuWakeLatencyHold::AcquireUnlessDisabled();
  if (std::getenv("PKFORGE_TIMING_DIAG") != nullptr)
    fmt::print(stderr, "cpu wake-up latency: {}\n", wake.detail());
  auto result = EvaluateSizes(lo, so);
  if (!result.ok()) {
    fmt::print(stderr, "pkforge-worker: {}\n", std::string(result.status().message()));
    return 2;
  }
  if (result_key_stdin) std::cout << FrameResult(ResultToJson(*result), key) << std::flush;
  else if (json) std::cout << ResultToJson(*result) << std::endl;
  else std::cout << ResultToText(*result) << SizeSummaryText(*result);
  return result->status() == pkforge::v1::EvaluationResult::OK ? 0 : 1;
}

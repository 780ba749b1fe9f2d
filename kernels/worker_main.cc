// pkforge-worker: the trusted evaluation harness (kernels/README.md).
//   launch  the judge: evaluates one compiled candidate, prints the result
//   list    the problem registry (what the executor serves as ListProblems)
//   rank    internal: one rank process, started only by `launch`
#include <cstdio>
#include <iostream>

#include "CLI/CLI.hpp"
#include "fmt/format.h"
#include "google/protobuf/util/json_util.h"
#include "kernels/harness/judge.h"
#include "kernels/harness/problem.h"
#include "kernels/harness/rank.h"
#include "pkforge/v1/common.pb.h"

namespace {

using namespace pkforge::kernels;  // NOLINT: binary entry point

int List(bool json) {
  pkforge::v1::ListProblemsResponse resp;
  for (const Problem* p : Problems()) {
    pkforge::v1::ProblemInfo* info = resp.add_problems();
    info->set_name(std::string(p->name));
    info->set_category(std::string(p->category));
    info->set_statement_markdown(std::string(ProblemPrompt(p->name)));
    info->add_backends(pkforge::v1::BACKEND_HOST);
    info->add_backends(pkforge::v1::BACKEND_CUDA);
    for (pkf_dtype d : p->dtypes)
      info->add_dtypes(d == PKF_F32 ? pkforge::v1::DTYPE_F32
                       : d == PKF_F16 ? pkforge::v1::DTYPE_F16 : pkforge::v1::DTYPE_BF16);
    info->add_size_presets("tiny");
    info->add_size_presets("default");
    for (const auto& d : p->dims) info->add_dims(d);
    info->set_reference_source(std::string(ProblemReferenceSource(p->name)));
    for (const auto& f : p->forbidden_calls) info->add_forbidden_calls(f);
    info->set_min_world_size(p->min_world);
    info->set_max_world_size(p->max_world);
  }
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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"pkforge-worker: trusted multi-rank kernel evaluation harness"};
  app.require_subcommand(1);

  LaunchOptions lo;
  bool json = false;
  auto* launch = app.add_subcommand("launch", "evaluate a compiled candidate");
  launch->add_option("--problem", lo.problem, "problem name")->required();
  launch->add_option("--backend", lo.backend, "host|cuda")->check(CLI::IsMember({"host", "cuda"}));
  launch->add_option("--world-size", lo.world_size, "ranks")->required();
  launch->add_option("--dtype", lo.dtype, "bf16|f16|f32")->check(CLI::IsMember({"bf16", "f16", "f32"}));
  launch->add_option("--size", lo.size, "tiny|default|K=V,...");
  launch->add_option("--trials", lo.trials, "correctness trials");
  launch->add_option("--warmup", lo.warmup, "warm-up iterations per side");
  launch->add_option("--iters", lo.iters, "timed iterations per side");
  launch->add_option("--timeout", lo.timeout_s, "seconds per phase");
  launch->add_flag("--json", json, "print the result as proto3 JSON");
  launch->add_option("--forbid", lo.forbid, "extra forbidden calls for the static scan")->delimiter(',');
  launch->add_option("--outlive-delay-ms", lo.outlive_delay_ms, "delay before re-reading outputs");
  launch->add_option("--reveal-seeds-after", lo.reveal_seeds_file,
                     "tests only: write the seeds here once every rank process is gone");
  launch->add_option("candidate", lo.candidate, "compiled candidate (.so)")->required();

  RankOptions ro;
  auto* rank = app.add_subcommand("rank", "internal: one rank process (started by launch)");
  rank->add_option("--role", ro.role)->required();
  rank->add_option("--rank", ro.rank)->required();
  rank->add_option("--world-size", ro.world)->required();
  rank->add_option("--problem", ro.problem)->required();
  rank->add_option("--dtype", ro.dtype)->required();
  rank->add_option("--dims", ro.dims)->required();
  rank->add_option("--slots", ro.slots)->required();
  rank->add_option("--scratch-bytes", ro.scratch_bytes)->required();
  rank->add_option("--flag-count", ro.flag_count)->required();
  rank->add_option("--candidate", ro.candidate);

  bool list_json = false;
  auto* list = app.add_subcommand("list", "print the problem registry");
  list->add_flag("--json", list_json, "proto3 JSON of ListProblemsResponse");

  CLI11_PARSE(app, argc, argv);
  if (*rank) return RankMain(ro);
  if (*list) return List(list_json);
  auto result = Evaluate(lo);
  if (!result.ok()) {
    fmt::print(stderr, "pkforge-worker: {}\n", std::string(result.status().message()));
    return 2;
  }
  if (json) std::cout << ResultToJson(*result) << std::endl;
  else std::cout << ResultToText(*result);
  return result->status() == pkforge::v1::EvaluationResult::OK ? 0 : 1;
}

// `pkforge report JOB -o job.html`: one self-contained HTML page per job (no
// network: inline CSS and SVG, no scripts), for a kernel engineer to read a
// trajectory rather than query it.
//
// Contract
// - Input is a v1::Trajectory as GetTrajectory returns it with
//   include_sources, include_llm_text and include_results (remote), or as
//   LoadReportTrajectory builds it from a database file opened read-only
//   (offline): one renderer for both paths.
// - The page holds: a header (problem, backend, world size, dtype, size,
//   agent kind, model, strategy, budget, state and stop reason, best speedup,
//   % of roofline, counts); three plots, each an <svg class="plot">:
//   per-evaluation speedup and the best-so-far step line (<path
//   class="best">) over wall-clock and over active time (as defined in
//   storage/plateau.h, with the plateau onset marked), and each correct
//   evaluation's % of roofline over wall-clock time; a table with
//   exactly one <tr class="eval"> per evaluation (status, speedup, times,
//   % of roofline, compile/queue/run ms), each followed by one
//   <tr class="detail"> holding the feedback rendered for the agent
//   (agent::RenderResult), compiler output, profiler and sanitizer summaries,
//   the LLM reply of its turn, and the unified diff of its candidate against
//   the previous evaluation's; and the best candidate's source.
// - Every piece of text from the trajectory (sources, LLM replies, compiler
//   output, labels, ids) is untrusted: it is HTML-escaped (& < > " ') with
//   invalid UTF-8 and control characters replaced, so a source containing
//   "</script><script>" or "<img onerror>" is shown as text and can never
//   become markup. The page itself contains no <script> element.
//
// Thread safety: pure functions of their arguments.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "pkforge/v1/orchestrator.pb.h"

namespace pkforge::cli {

// Text -> HTML text/attribute content: & < > " ' escaped; bytes that are not
// valid UTF-8 and C0 controls other than \t \n \r become U+FFFD.
std::string HtmlEscape(std::string_view text);

// A line-based diff (longest common subsequence of lines) of `before` and
// `after` in unified format: "--- a_name", "+++ b_name", "@@ -l,n +l,n @@"
// hunks with `context` lines around each change. "" when equal. Inputs whose
// differing middle part (after the common prefix and suffix lines) exceeds
// `max_cells` line pairs are diffed as "all old lines removed, all new added".
std::string UnifiedDiff(std::string_view before, std::string_view after,
                        std::string_view a_name, std::string_view b_name, int context = 3,
                        size_t max_cells = 16'000'000);

struct ReportOptions {
  std::string generated_by = "pkforge report";
  int64_t generated_wall_us = 0;      // shown in the footer; 0 = not shown
  size_t max_text_chars = 20000;      // per LLM reply / compiler output block
  size_t max_diff_chars = 60000;      // per diff
};

// The HTML page described above. INVALID_ARGUMENT when the trajectory has no job.
absl::StatusOr<std::string> RenderJobReport(const v1::Trajectory& trajectory,
                                            const ReportOptions& options = {});

// The trajectory of `job_id` from the database file `db`, opened read-only as
// every --db command does (cli/offline.h), with everything GetTrajectory
// would return with all include_* flags.
absl::StatusOr<v1::Trajectory> LoadReportTrajectory(const std::string& db,
                                                    const std::string& job_id);

}  // namespace pkforge::cli

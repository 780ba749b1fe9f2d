// Writers for a PlateauReport (storage/plateau.h): CSV tables, one JSON
// document, and an SVG plot of best-so-far curves.
//
// Contract
// - CSV: RFC 4180 quoting (fields with a comma, quote, CR or LF are quoted,
//   quotes doubled), "\n" line ends, a header row first. Numbers are written
//   in the shortest form that reads back to the same double; a missing value
//   (never correct, no plateau, ...) is an empty field. Tables:
//     JobSummaryCsv:   one row per job: job_id,problem,model,strategy,
//                      agent_kind,label,axis,end_s,evaluations,
//                      correct_evaluations,first_correct_s,final_best,
//                      time_to_<f>pct_s (one per fraction, e.g.
//                      time_to_90pct_s),plateau_onset_s,best_at_onset
//     CurveCsv:        long format, job_id,t,best,event: one "improved" row
//                      per step of each job's best-so-far curve, then one
//                      "end" row at the run's end carrying the final best
//                      (empty when never correct), so a step plot can be drawn
//                      to where the run stopped.
//     GroupCurveCsv:   group,t,median,p10,p90,jobs_correct,jobs_running.
//     FastPCsv:        group,p,t,share,jobs_running; the whole set's rows have
//                      group "(all jobs)".
//     TruncationCsv:   group,budget_s,jobs,jobs_correct,share_correct,
//                      jobs_ended_before,mean_best,median_best,p10_best,
//                      p90_best,geomean_best; "(all jobs)" rows first.
// - JSON (ReportToJson): one object {"axis", "options", "jobs", "groups",
//   "fast_p", "truncation"} mirroring the structs field by field (snake_case
//   names as in plateau.h; a job's curve as [[t, best], ...]); a missing value
//   is null. Doubles are written with full round-trip precision. Strings that
//   are not valid UTF-8 have the bad bytes replaced by U+FFFD.
// - SVG (RenderPlateauSvg): a standalone SVG 1.1 document. Each drawn series
//   is exactly one <path class="series"> (a step line: horizontal, then
//   vertical at each improvement); everything else (axes, grid, ticks, band,
//   onset markers, legend, reference line) uses other elements or classes, so
//   a reader can count series by that one selector. All text is XML-escaped,
//   with invalid UTF-8 and characters XML 1.0 forbids replaced by U+FFFD.
//   * kJobs: one series per job that was ever correct (a never-correct job has
//     no curve; a note under the title counts them). Series run from the first
//     correct point to the run's end; a circle marks the plateau onset.
//   * kGroups: one series per group: its median curve from t = 0 (0 until
//     half of the group has a correct candidate, see plateau.h), with the
//     10-90% band shaded behind it and a circle at the group's median plateau
//     onset.
//   Colours come from a 10-colour qualitative palette; past 10 series they
//   repeat with dashes. A dashed horizontal line marks 1.0x (the reference).
//   With log_x, times <= 0 are drawn at the axis's left edge.
//   INVALID_ARGUMENT for sizes too small or too large to lay out.
//
// Thread safety: pure functions of their arguments.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "storage/plateau.h"

namespace pkforge::storage {

std::string JobSummaryCsv(const PlateauReport& report);
std::string CurveCsv(const PlateauReport& report);
std::string GroupCurveCsv(const PlateauReport& report);
std::string FastPCsv(const PlateauReport& report);
std::string TruncationCsv(const PlateauReport& report);

// indent < 0: compact, one line.
absl::StatusOr<std::string> ReportToJson(const PlateauReport& report, int indent = 2);

enum class SvgMode { kJobs, kGroups };

struct SvgOptions {
  SvgMode mode = SvgMode::kGroups;
  bool log_x = false;
  std::string title;            // empty: "Best speedup so far" with the job count
  int width = 960;              // pixels, 320..8000
  int height = 560;             // pixels, 240..8000
  bool show_band = true;        // kGroups: the 10-90% band
  bool show_onsets = true;      // plateau onset markers
  int max_legend_entries = 24;  // the rest are summarised as "+N more"
};

absl::StatusOr<std::string> RenderPlateauSvg(const PlateauReport& report,
                                             const SvgOptions& options = {});

}  // namespace pkforge::storage

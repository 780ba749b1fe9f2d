#include "storage/plateau_export.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "common/utf8.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"

namespace pkforge::storage {
namespace {

// ---------------------------------------------------------------- text helpers

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Copies `s`, replacing every byte that does not start a valid UTF-8 sequence
// (and, for XML, every code point XML 1.0 forbids even as a character
// reference) with U+FFFD. Names come from users and LLM configs; one stray
// byte must not make the whole SVG unreadable.
std::string SanitizeUtf8(std::string_view s, bool for_xml) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    uint32_t cp = 0;
    const size_t len = Utf8SequenceAt(s, i, &cp);
    bool valid = len > 0;
    if (valid && for_xml) {
      valid =
          (cp >= 0x20 || cp == '\t' || cp == '\n' || cp == '\r') && cp != 0xFFFE && cp != 0xFFFF;
    }
    if (valid) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out.append(kReplacement);
      i += 1;
    }
  }
  return out;
}

std::string XmlEscape(std::string_view raw) {
  const std::string s = SanitizeUtf8(raw, /*for_xml=*/true);
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// At most `max_chars` code points, with an ellipsis when cut. Counts code
// points, not bytes, so a cut never splits a UTF-8 sequence.
std::string Ellipsize(std::string_view s, size_t max_chars) {
  auto is_lead = [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; };
  const auto total = static_cast<size_t>(std::count_if(s.begin(), s.end(), is_lead));
  if (max_chars == 0 || total <= max_chars) return std::string(s);
  size_t chars = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (is_lead(s[i]) && chars++ == max_chars - 1) {
      return std::string(s.substr(0, i)) + "\xE2\x80\xA6";  // U+2026
    }
  }
  return std::string(s);
}

std::string Num(double v) { return fmt::format("{}", v); }
std::string Num(const std::optional<double>& v) { return v ? Num(*v) : std::string(); }

std::string CsvField(std::string_view s) {
  if (s.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

void CsvRow(std::string& out, const std::vector<std::string>& fields) {
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) out += ',';
    out += CsvField(fields[i]);
  }
  out += '\n';
}

// 0.9 -> "90", 0.995 -> "99.5"; six significant digits hide binary noise
// such as 0.29 * 100 = 28.999999999999996.
std::string PercentName(double fraction) { return fmt::format("{:.6g}", fraction * 100); }

constexpr std::string_view kAllJobs = "(all jobs)";

}  // namespace

// ------------------------------------------------------------------------- CSV

std::string JobSummaryCsv(const PlateauReport& report) {
  std::string out;
  std::vector<std::string> header = {
      "job_id",          "problem",   "model", "strategy",    "agent_kind",
      "label",           "axis",      "end_s", "evaluations", "correct_evaluations",
      "first_correct_s", "final_best"};
  for (double f : report.options.fractions) {
    header.push_back(fmt::format("time_to_{}pct_s", PercentName(f)));
  }
  header.push_back("plateau_onset_s");
  header.push_back("best_at_onset");
  header.push_back("best_multi_size_score");  // size-ladder jobs only
  // Evaluations at other settings than the job's (search rungs): not on the
  // curve, so not in any column above; reported apart.
  header.push_back("other_settings_evaluations");
  header.push_back("other_settings_best");
  CsvRow(out, header);
  const std::string axis(TimeAxisName(report.options.axis));
  for (const JobSummary& j : report.jobs) {
    std::vector<std::string> row = {j.job_id,
                                    j.problem,
                                    j.model,
                                    j.strategy,
                                    j.agent_kind,
                                    j.label,
                                    axis,
                                    Num(j.curve.end_s),
                                    std::to_string(j.curve.evaluations),
                                    std::to_string(j.curve.correct_evaluations),
                                    Num(j.first_correct_s),
                                    Num(j.final_best)};
    for (const std::optional<double>& t : j.time_to_fraction_s) row.push_back(Num(t));
    row.push_back(Num(j.plateau_onset_s));
    row.push_back(Num(j.best_at_onset));
    row.push_back(Num(j.best_multi_size_score));
    row.push_back(std::to_string(j.curve.other_evaluations));
    row.push_back(Num(j.curve.other_best));
    CsvRow(out, row);
  }
  return out;
}

std::string CurveCsv(const PlateauReport& report) {
  std::string out;
  CsvRow(out, {"job_id", "t", "best", "event"});
  for (const JobSummary& j : report.jobs) {
    for (const Step& s : j.curve.steps) CsvRow(out, {j.job_id, Num(s.t), Num(s.best), "improved"});
    CsvRow(out, {j.job_id, Num(j.curve.end_s), Num(j.final_best), "end"});
  }
  return out;
}

std::string GroupCurveCsv(const PlateauReport& report) {
  std::string out;
  CsvRow(out, {"group", "t", "median", "p10", "p90", "jobs_correct", "jobs_running"});
  for (const GroupSummary& g : report.groups) {
    for (const BandPoint& p : g.curve) {
      CsvRow(out, {g.name, Num(p.t), Num(p.median), Num(p.p10), Num(p.p90),
                   std::to_string(p.jobs_correct), std::to_string(p.jobs_running)});
    }
  }
  return out;
}

std::string FastPCsv(const PlateauReport& report) {
  std::string out;
  CsvRow(out, {"group", "p", "t", "share", "jobs_running"});
  auto rows = [&](std::string_view group, const std::vector<FastPCurve>& curves) {
    for (const FastPCurve& c : curves) {
      for (const FastPPoint& p : c.points) {
        CsvRow(out, {std::string(group), Num(c.p), Num(p.t), Num(p.share),
                     std::to_string(p.jobs_running)});
      }
    }
  };
  rows(kAllJobs, report.fast_p);
  for (const GroupSummary& g : report.groups) rows(g.name, g.fast_p);
  return out;
}

std::string TruncationCsv(const PlateauReport& report) {
  std::string out;
  CsvRow(out, {"group", "budget_s", "jobs", "jobs_correct", "share_correct", "jobs_ended_before",
               "mean_best", "median_best", "p10_best", "p90_best", "geomean_best"});
  auto rows = [&](std::string_view group, const std::vector<TruncationSummary>& summaries) {
    for (const TruncationSummary& s : summaries) {
      CsvRow(out, {std::string(group), Num(s.budget_s), std::to_string(s.jobs),
                   std::to_string(s.jobs_correct), Num(s.share_correct),
                   std::to_string(s.jobs_ended_before), Num(s.mean_best), Num(s.median_best),
                   Num(s.p10_best), Num(s.p90_best), Num(s.geomean_best)});
    }
  };
  rows(kAllJobs, report.truncation);
  for (const GroupSummary& g : report.groups) rows(g.name, g.truncation);
  return out;
}

// ------------------------------------------------------------------------ JSON

namespace {

// Ordered, so the document reads in the order the header describes.
using json = nlohmann::ordered_json;

json Opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

json FastPJson(const std::vector<FastPCurve>& curves) {
  json out = json::array();
  for (const FastPCurve& c : curves) {
    json points = json::array();
    for (const FastPPoint& p : c.points) {
      points.push_back({{"t", p.t}, {"share", p.share}, {"jobs_running", p.jobs_running}});
    }
    out.push_back({{"p", c.p}, {"points", std::move(points)}});
  }
  return out;
}

json TruncationJson(const std::vector<TruncationSummary>& summaries) {
  json out = json::array();
  for (const TruncationSummary& s : summaries) {
    out.push_back({{"budget_s", s.budget_s},
                   {"jobs", s.jobs},
                   {"jobs_correct", s.jobs_correct},
                   {"share_correct", s.share_correct},
                   {"jobs_ended_before", s.jobs_ended_before},
                   {"mean_best", Opt(s.mean_best)},
                   {"median_best", Opt(s.median_best)},
                   {"p10_best", Opt(s.p10_best)},
                   {"p90_best", Opt(s.p90_best)},
                   {"geomean_best", Opt(s.geomean_best)}});
  }
  return out;
}

json ReportJson(const PlateauReport& report) {
  const PlateauOptions& o = report.options;
  json group_by = json::array();
  for (GroupKey k : o.group_by) group_by.push_back(std::string(GroupKeyName(k)));
  json options = {
      {"axis", std::string(TimeAxisName(o.axis))},
      {"epsilon", o.onset.epsilon},
      {"window_s", Opt(o.onset.window_s)},
      {"min_tail_fraction", o.onset.min_tail_fraction},
      {"min_tail_s", Opt(o.onset.min_tail_s)},
      {"fractions", o.fractions},
      {"fast_p", o.fast_p},
      {"time_grid", o.time_grid},
      {"budgets_s", o.budgets_s},
      {"group_by", std::move(group_by)},
  };

  json jobs = json::array();
  for (const JobSummary& j : report.jobs) {
    json curve = json::array();
    for (const Step& s : j.curve.steps) curve.push_back({s.t, s.best});
    json fractions = json::array();
    for (size_t i = 0; i < j.time_to_fraction_s.size() && i < o.fractions.size(); ++i) {
      fractions.push_back({{"fraction", o.fractions[i]}, {"t_s", Opt(j.time_to_fraction_s[i])}});
    }
    jobs.push_back({{"job_id", j.job_id},
                    {"problem", j.problem},
                    {"model", j.model},
                    {"strategy", j.strategy},
                    {"agent_kind", j.agent_kind},
                    {"label", j.label},
                    {"end_s", j.curve.end_s},
                    {"evaluations", j.curve.evaluations},
                    {"correct_evaluations", j.curve.correct_evaluations},
                    {"first_correct_s", Opt(j.first_correct_s)},
                    {"final_best", Opt(j.final_best)},
                    // Evaluations at other settings than the job's (search
                    // rungs): not on the curve, reported apart.
                    {"other_settings_evaluations", j.curve.other_evaluations},
                    {"other_settings_best", Opt(j.curve.other_best)},
                    {"best_multi_size_score", Opt(j.best_multi_size_score)},
                    {"time_to_fraction", std::move(fractions)},
                    {"plateau_onset_s", Opt(j.plateau_onset_s)},
                    {"best_at_onset", Opt(j.best_at_onset)},
                    {"curve", std::move(curve)}});
  }

  json groups = json::array();
  for (const GroupSummary& g : report.groups) {
    json keys = json::object();
    for (size_t i = 0; i < g.key_values.size() && i < o.group_by.size(); ++i) {
      keys[std::string(GroupKeyName(o.group_by[i]))] = g.key_values[i];
    }
    json job_ids = json::array();
    for (int i : g.job_indices) job_ids.push_back(report.jobs[i].job_id);
    json curve = json::array();
    for (const BandPoint& p : g.curve) {
      curve.push_back({{"t", p.t},
                       {"median", p.median},
                       {"p10", p.p10},
                       {"p90", p.p90},
                       {"jobs_correct", p.jobs_correct},
                       {"jobs_running", p.jobs_running}});
    }
    groups.push_back({{"name", g.name},
                      {"keys", std::move(keys)},
                      {"job_ids", std::move(job_ids)},
                      {"jobs", g.jobs},
                      {"jobs_correct", g.jobs_correct},
                      {"share_correct", g.share_correct},
                      {"jobs_with_plateau", g.jobs_with_plateau},
                      {"median_final_best", Opt(g.median_final_best)},
                      {"median_plateau_onset_s", Opt(g.median_plateau_onset_s)},
                      {"median_first_correct_s", Opt(g.median_first_correct_s)},
                      {"curve", std::move(curve)},
                      {"fast_p", FastPJson(g.fast_p)},
                      {"truncation", TruncationJson(g.truncation)}});
  }

  return {{"axis", std::string(TimeAxisName(o.axis))},
          {"options", std::move(options)},
          {"jobs", std::move(jobs)},
          {"groups", std::move(groups)},
          {"fast_p", FastPJson(report.fast_p)},
          {"truncation", TruncationJson(report.truncation)}};
}

}  // namespace

absl::StatusOr<std::string> ReportToJson(const PlateauReport& report, int indent) {
  // nlohmann reports misuse by exceptions; none may leave this module.
  try {
    return ReportJson(report).dump(indent < 0 ? -1 : indent, ' ', /*ensure_ascii=*/false,
                                   json::error_handler_t::replace);
  } catch (const std::exception& e) {
    return absl::InternalError(fmt::format("writing plateau report as JSON: {}", e.what()));
  }
}

// ------------------------------------------------------------------------- SVG

namespace {

// matplotlib's "tab10": qualitative, distinguishable, familiar to researchers.
constexpr std::string_view kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                         "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
constexpr size_t kPaletteSize = sizeof(kPalette) / sizeof(kPalette[0]);
// Past the palette, series repeat colours with these dash patterns.
constexpr std::string_view kDashes[] = {"", "7 3", "2 2", "9 3 2 3"};

struct Style {
  std::string_view colour;
  std::string_view dash;
};
Style SeriesStyle(size_t i) {
  return {kPalette[i % kPaletteSize],
          kDashes[(i / kPaletteSize) % (sizeof(kDashes) / sizeof(kDashes[0]))]};
}

// What one series draws: a step line through `points` (horizontal to the next
// point's time, then vertical to its value) continued horizontally to end_t.
struct Series {
  std::string name;
  std::string tooltip;
  std::vector<std::pair<double, double>> points;
  double end_t = 0;
  const std::vector<BandPoint>* band = nullptr;
  std::optional<std::pair<double, double>> onset;
};

// Map from data to pixels; linear or log10.
struct Scale {
  bool log = false;
  double lo = 0, hi = 1;
  double px_lo = 0, px_hi = 1;
  std::vector<double> ticks;
  int decimals = 0;  // for linear tick labels

  double Map(double v) const {
    double f;
    if (log) {
      v = std::max(v, lo);
      f = (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
    } else {
      f = (v - lo) / (hi - lo);
    }
    return px_lo + f * (px_hi - px_lo);
  }
  std::string Label(double v) const {
    return log ? fmt::format("{:g}", v) : fmt::format("{:.{}f}", v, decimals);
  }
};

// A 1-2-5 tick step giving about `target` intervals over [0, max].
double NiceStep(double max, int target) {
  const double raw = max / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / mag;
  const double nice = f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10;
  return nice * mag;
}

Scale LinearScale(double max, int target, double px_lo, double px_hi) {
  Scale s;
  if (!(max > 0)) max = 1;
  const double step = NiceStep(max, target);
  const int n = static_cast<int>(std::ceil(max / step - 1e-9));
  s.lo = 0;
  s.hi = n * step;
  s.px_lo = px_lo;
  s.px_hi = px_hi;
  for (int i = 0; i <= n; ++i) s.ticks.push_back(i * step);
  s.decimals = std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9)));
  return s;
}

// Decade ticks from 10^floor(log10(min_positive)) up to `max` (not rounded up
// to the next decade, which could waste most of the width), with 2x and 5x
// ticks added when the range spans three decades or fewer.
Scale LogScale(double min_positive, double max, double px_lo, double px_hi) {
  Scale s;
  s.log = true;
  if (!(max > 0)) max = 1;
  if (!(min_positive > 0) || min_positive > max) min_positive = max / 1000;
  const int lo_exp = static_cast<int>(std::floor(std::log10(min_positive) + 1e-9));
  s.lo = std::pow(10.0, lo_exp);
  s.hi = std::max(max, s.lo * 10);
  s.px_lo = px_lo;
  s.px_hi = px_hi;
  const double decades = std::log10(s.hi / s.lo);
  const bool dense = decades <= 3;
  // At most ~12 labelled decades, however wide the range.
  const int every = std::max(1, static_cast<int>(std::ceil(decades / 12)));
  for (int e = lo_exp; std::pow(10.0, e) <= s.hi * (1 + 1e-9); e += every) {
    const double base = std::pow(10.0, e);
    for (double m : {1.0, 2.0, 5.0}) {
      if ((m == 1.0 || dense) && m * base <= s.hi * (1 + 1e-9)) s.ticks.push_back(m * base);
    }
  }
  return s;
}

std::string Px(double v) { return fmt::format("{:.2f}", v); }

std::string StepPath(const Series& s, const Scale& x, const Scale& y) {
  std::string d;
  for (size_t i = 0; i < s.points.size(); ++i) {
    const auto& [t, v] = s.points[i];
    if (i == 0) {
      d += fmt::format("M{},{}", Px(x.Map(t)), Px(y.Map(v)));
    } else {
      d += fmt::format(" H{} V{}", Px(x.Map(t)), Px(y.Map(v)));
    }
  }
  if (!s.points.empty() && s.end_t > s.points.back().first) d += " H" + Px(x.Map(s.end_t));
  return d;
}

// The band as one closed outline: p90 steps forward, p10 steps back.
std::string BandPath(const std::vector<BandPoint>& band, const Scale& x, const Scale& y) {
  if (band.empty()) return "";
  std::string d = fmt::format("M{},{}", Px(x.Map(band[0].t)), Px(y.Map(band[0].p90)));
  for (size_t i = 1; i < band.size(); ++i) {
    d += fmt::format(" H{} V{}", Px(x.Map(band[i].t)), Px(y.Map(band[i].p90)));
  }
  d += " V" + Px(y.Map(band.back().p10));
  for (size_t i = band.size() - 1; i > 0; --i) {
    d += fmt::format(" V{} H{}", Px(y.Map(band[i - 1].p10)), Px(x.Map(band[i - 1].t)));
  }
  d += " Z";
  return d;
}

std::string FormatSeconds(double s) { return fmt::format("{:.4g} s", s); }

}  // namespace

absl::StatusOr<std::string> RenderPlateauSvg(const PlateauReport& report,
                                             const SvgOptions& options) {
  if (options.width < 320 || options.width > 8000 || options.height < 240 ||
      options.height > 8000) {
    return absl::InvalidArgumentError(
        fmt::format("SVG size {}x{} out of range (width 320..8000, height 240..8000)",
                    options.width, options.height));
  }
  const double width = options.width, height = options.height;

  // ---- what to draw
  std::vector<Series> series;
  int never_correct = 0;
  if (options.mode == SvgMode::kJobs) {
    for (const JobSummary& j : report.jobs) {
      if (j.curve.steps.empty()) {
        ++never_correct;
        continue;
      }
      Series s;
      s.name = j.job_id;
      s.tooltip = fmt::format("{} ({}{}{}): final best {:.3g}x", j.job_id, j.problem,
                              j.model.empty() ? "" : ", ", j.model, *j.final_best);
      for (const Step& st : j.curve.steps) s.points.emplace_back(st.t, st.best);
      s.end_t = j.curve.end_s;
      if (j.plateau_onset_s) s.onset.emplace(*j.plateau_onset_s, *j.best_at_onset);
      series.push_back(std::move(s));
    }
  } else {
    for (const GroupSummary& g : report.groups) {
      if (g.curve.empty()) continue;
      Series s;
      s.name = g.name;
      s.tooltip = fmt::format("{}: {} jobs, {} correct{}", g.name, g.jobs, g.jobs_correct,
                              g.median_final_best
                                  ? fmt::format(", median final best {:.3g}x", *g.median_final_best)
                                  : "");
      for (const BandPoint& p : g.curve) s.points.emplace_back(p.t, p.median);
      s.end_t = g.curve.back().t;
      s.band = &g.curve;
      if (g.median_plateau_onset_s) {
        const double t = *g.median_plateau_onset_s;
        double v = g.curve.front().median;
        for (const BandPoint& p : g.curve) {
          if (p.t <= t) v = p.median;
        }
        s.onset.emplace(t, v);
      }
      series.push_back(std::move(s));
    }
  }

  // ---- layout
  const double legend_w = std::min(220.0, width * 0.28);
  const double left = 72, right = legend_w + 16, top = 62, bottom = 58;
  const double px0 = left, px1 = width - right, py0 = top, py1 = height - bottom;

  double max_t = 0, min_pos_t = 0, max_v = 1.0;  // 1.0: the reference line is always shown
  for (const Series& s : series) {
    max_t = std::max(max_t, s.end_t);
    for (const auto& [t, v] : s.points) {
      max_t = std::max(max_t, t);
      max_v = std::max(max_v, v);
      if (t > 0 && (min_pos_t == 0 || t < min_pos_t)) min_pos_t = t;
    }
    if (s.band && options.show_band) {
      for (const BandPoint& p : *s.band) max_v = std::max(max_v, p.p90);
    }
  }
  const Scale x =
      options.log_x ? LogScale(min_pos_t, max_t, px0, px1)
                    : LinearScale(max_t, std::max(2, static_cast<int>((px1 - px0) / 90)), px0, px1);
  const Scale y =
      LinearScale(max_v * 1.05, std::max(2, static_cast<int>((py1 - py0) / 60)), py1, py0);

  const std::string_view axis_name = TimeAxisName(report.options.axis);
  std::string title = options.title;
  if (title.empty()) {
    title = fmt::format("Best speedup so far: {} job{}", report.jobs.size(),
                        report.jobs.size() == 1 ? "" : "s");
    if (options.mode == SvgMode::kGroups) {
      title +=
          fmt::format(", {} group{}", report.groups.size(), report.groups.size() == 1 ? "" : "s");
    }
  }
  const OnsetOptions& onset = report.options.onset;
  std::string subtitle =
      onset.window_s
          ? fmt::format("plateau: gain < {:g}% within {:g} s", onset.epsilon * 100, *onset.window_s)
          : fmt::format("plateau: gain < {:g}% for the rest of the run", onset.epsilon * 100);
  if (options.mode == SvgMode::kGroups) {
    subtitle += options.show_band
                    ? "; line: median job, band: 10-90% of jobs (no correct candidate yet = 0)"
                    : "; line: median job (no correct candidate yet = 0)";
  } else if (never_correct > 0) {
    subtitle += fmt::format("; {} job{} never correct (not drawn)", never_correct,
                            never_correct == 1 ? "" : "s");
  }

  int other = 0;
  for (const JobSummary& j : report.jobs) other += j.curve.other_evaluations;
  if (other > 0) {
    subtitle += fmt::format("; {} evaluation{} at other settings (search rungs) not drawn", other,
                            other == 1 ? "" : "s");
  }

  std::string out;
  out.reserve(8192 + series.size() * 512);
  out += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"Helvetica, Arial, sans-serif\">\n",
      options.width, options.height);
  out += fmt::format("<title>{}</title>\n", XmlEscape(title));
  out += fmt::format(
      "<defs><clipPath id=\"pkf-plot-area\"><rect x=\"{}\" y=\"{}\" width=\"{}\" "
      "height=\"{}\"/></clipPath></defs>\n",
      Px(px0), Px(py0 - 2), Px(px1 - px0), Px(py1 - py0 + 4));
  out +=
      "<rect class=\"background\" x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" "
      "fill=\"#ffffff\"/>\n";
  out += fmt::format(
      "<text class=\"title\" x=\"{}\" y=\"24\" font-size=\"17\" font-weight=\"bold\" "
      "fill=\"#222222\">{}</text>\n",
      Px(px0), XmlEscape(title));
  out += fmt::format(
      "<text class=\"subtitle\" x=\"{}\" y=\"44\" font-size=\"11.5\" fill=\"#555555\">{}</text>\n",
      Px(px0), XmlEscape(subtitle));

  // Grid and ticks.
  out += "<g class=\"grid\" stroke=\"#e6e6e6\" stroke-width=\"1\">\n";
  for (double t : x.ticks) {
    out += fmt::format("<line class=\"grid\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>\n",
                       Px(x.Map(t)), Px(py0), Px(py1));
  }
  for (double v : y.ticks) {
    out += fmt::format("<line class=\"grid\" x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\"/>\n",
                       Px(px0), Px(y.Map(v)), Px(px1));
  }
  out += "</g>\n";
  out += "<g class=\"axes\" stroke=\"#333333\" stroke-width=\"1\">\n";
  out += fmt::format("<line class=\"axis\" x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\"/>\n",
                     Px(px0), Px(py1), Px(px1));
  out += fmt::format("<line class=\"axis\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>\n",
                     Px(px0), Px(py0), Px(py1));
  for (double t : x.ticks) {
    out += fmt::format("<line class=\"tick\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>\n",
                       Px(x.Map(t)), Px(py1), Px(py1 + 5));
  }
  for (double v : y.ticks) {
    out += fmt::format("<line class=\"tick\" x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\"/>\n",
                       Px(px0 - 5), Px(y.Map(v)), Px(px0));
  }
  out += "</g>\n";
  out += "<g class=\"tick-labels\" font-size=\"11\" fill=\"#333333\">\n";
  for (double t : x.ticks) {
    out += fmt::format(
        "<text class=\"tick-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
        Px(x.Map(t)), Px(py1 + 18), XmlEscape(x.Label(t)));
  }
  for (double v : y.ticks) {
    out +=
        fmt::format("<text class=\"tick-label\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n",
                    Px(px0 - 8), Px(y.Map(v) + 4), XmlEscape(y.Label(v)));
  }
  out += "</g>\n";
  out += fmt::format(
      "<text class=\"axis-label\" x=\"{}\" y=\"{}\" font-size=\"13\" text-anchor=\"middle\" "
      "fill=\"#222222\">{} time (s){}</text>\n",
      Px((px0 + px1) / 2), Px(height - 14), axis_name, options.log_x ? ", log scale" : "");
  out += fmt::format(
      "<text class=\"axis-label\" x=\"{0}\" y=\"{1}\" font-size=\"13\" text-anchor=\"middle\" "
      "fill=\"#222222\" transform=\"rotate(-90 {0} {1})\">best speedup over reference (x)</text>\n",
      Px(20), Px((py0 + py1) / 2));

  // The reference: a candidate exactly as fast as the baseline.
  out += fmt::format(
      "<line class=\"reference\" x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#444444\" "
      "stroke-width=\"1.2\" stroke-dasharray=\"6 4\"/>\n",
      Px(px0), Px(y.Map(1.0)), Px(px1));
  out += fmt::format(
      "<text class=\"reference-label\" x=\"{}\" y=\"{}\" font-size=\"10.5\" text-anchor=\"end\" "
      "fill=\"#444444\">1.0x reference</text>\n",
      Px(px1 - 4), Px(y.Map(1.0) - 4));

  if (series.empty()) {
    out += fmt::format(
        "<text class=\"no-data\" x=\"{}\" y=\"{}\" font-size=\"14\" text-anchor=\"middle\" "
        "fill=\"#888888\">no correct candidates to plot</text>\n",
        Px((px0 + px1) / 2), Px((py0 + py1) / 2));
  }

  // Bands go first so every line stays visible on top of them.
  if (options.mode == SvgMode::kGroups && options.show_band) {
    out += "<g class=\"bands\" clip-path=\"url(#pkf-plot-area)\">\n";
    for (size_t i = 0; i < series.size(); ++i) {
      if (!series[i].band) continue;
      out += fmt::format(
          "<path class=\"band\" d=\"{}\" fill=\"{}\" fill-opacity=\"0.16\" stroke=\"none\"/>\n",
          BandPath(*series[i].band, x, y), SeriesStyle(i).colour);
    }
    out += "</g>\n";
  }
  out +=
      "<g class=\"lines\" clip-path=\"url(#pkf-plot-area)\" fill=\"none\" "
      "stroke-width=\"2\" stroke-linejoin=\"miter\">\n";
  for (size_t i = 0; i < series.size(); ++i) {
    const Style st = SeriesStyle(i);
    out += fmt::format("<path class=\"series\" d=\"{}\" stroke=\"{}\"{}><title>{}</title></path>\n",
                       StepPath(series[i], x, y), st.colour,
                       st.dash.empty() ? "" : fmt::format(" stroke-dasharray=\"{}\"", st.dash),
                       XmlEscape(series[i].tooltip));
  }
  out += "</g>\n";
  bool any_onset = false;
  if (options.show_onsets) {
    out += "<g class=\"onsets\">\n";
    for (size_t i = 0; i < series.size(); ++i) {
      if (!series[i].onset) continue;
      any_onset = true;
      const auto [t, v] = *series[i].onset;
      out += fmt::format(
          "<circle class=\"onset\" cx=\"{}\" cy=\"{}\" r=\"4.5\" fill=\"#ffffff\" stroke=\"{}\" "
          "stroke-width=\"2\"><title>{}</title></circle>\n",
          Px(x.Map(t)), Px(y.Map(v)), SeriesStyle(i).colour,
          XmlEscape(
              fmt::format("{}: plateau from {} at {:.3g}x", series[i].name, FormatSeconds(t), v)));
    }
    out += "</g>\n";
  }

  // Legend, right of the plot; what does not fit is counted, not dropped silently.
  const double lx = px1 + 14, row_h = 18;
  const int fit = std::max(1, static_cast<int>((py1 - py0 - (any_onset ? row_h : 0)) / row_h));
  const int limit = std::max(1, std::min(options.max_legend_entries, fit));
  const int n = static_cast<int>(series.size());
  const int shown = n <= limit ? n : limit - 1;
  // Upper-case ids run ~7.5 px per glyph at 11 px; narrower guesses overflow.
  const size_t max_chars = static_cast<size_t>(std::max(4.0, (legend_w - 40) / 7.5));
  out += "<g class=\"legend\" font-size=\"11\" fill=\"#222222\">\n";
  double ly = py0 + 8;
  for (int i = 0; i < shown; ++i, ly += row_h) {
    const Style st = SeriesStyle(i);
    out += fmt::format(
        "<g class=\"legend-entry\"><title>{}</title><line class=\"legend-swatch\" x1=\"{}\" "
        "y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"2.5\"{}/>"
        "<text class=\"legend-label\" x=\"{}\" y=\"{}\">{}</text></g>\n",
        XmlEscape(series[i].name), Px(lx), Px(ly), Px(lx + 24), Px(ly), st.colour,
        st.dash.empty() ? "" : fmt::format(" stroke-dasharray=\"{}\"", st.dash), Px(lx + 30),
        Px(ly + 4), XmlEscape(Ellipsize(series[i].name, max_chars)));
  }
  if (shown < n) {
    out += fmt::format(
        "<text class=\"legend-more\" x=\"{}\" y=\"{}\" fill=\"#555555\">+{} more</text>\n",
        Px(lx + 30), Px(ly + 4), n - shown);
    ly += row_h;
  }
  if (any_onset) {
    out += fmt::format(
        "<circle class=\"legend-onset\" cx=\"{}\" cy=\"{}\" r=\"4.5\" fill=\"#ffffff\" "
        "stroke=\"#444444\" stroke-width=\"2\"/>"
        "<text class=\"legend-label\" x=\"{}\" y=\"{}\">plateau onset</text>\n",
        Px(lx + 12), Px(ly), Px(lx + 30), Px(ly + 4));
  }
  out += "</g>\n</svg>\n";
  return out;
}

}  // namespace pkforge::storage

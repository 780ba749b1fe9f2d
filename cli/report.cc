#include "cli/report.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/utf8.h"
#include "absl/strings/str_cat.h"
#include "agent/prompt.h"
#include "cli/offline.h"
#include "common/ids.h"
#include "common/status.h"
#include "convert/convert.h"
#include "fmt/format.h"
#include "google/protobuf/util/json_util.h"
#include "storage/plateau.h"
#include "storage/plateau_loader.h"

namespace pkforge::cli {

// ------------------------------------------------------------------ escaping

std::string HtmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = s[i];
    if (c < 0x80) {
      switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&#39;"; break;
        case '\t': case '\n': case '\r': out += static_cast<char>(c); break;
        default:
          if (c < 0x20 || c == 0x7f) {
            out += "\xEF\xBF\xBD";
          } else {
            out += static_cast<char>(c);
          }
      }
      ++i;
      continue;
    }
    // A well-formed UTF-8 sequence (common/utf8.h) is copied; anything else
    // becomes one U+FFFD per bad byte.
    uint32_t cp = 0;
    if (const size_t len = Utf8SequenceAt(text, i, &cp); len > 0) {
      out.append(text.substr(i, len));
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

// ---------------------------------------------------------------------- diff

namespace {

std::vector<std::string_view> SplitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) {
      lines.push_back(text.substr(start));
      break;
    }
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

struct Edit {
  char op;  // ' ', '-', '+'
  std::string_view line;
};

// Edit script from the LCS of the lines. The common prefix and suffix are
// taken first, so the quadratic table covers only the part that changed.
std::vector<Edit> DiffLines(const std::vector<std::string_view>& a,
                            const std::vector<std::string_view>& b, size_t max_cells) {
  size_t pre = 0;
  while (pre < a.size() && pre < b.size() && a[pre] == b[pre]) ++pre;
  size_t suf = 0;
  while (suf < a.size() - pre && suf < b.size() - pre &&
         a[a.size() - 1 - suf] == b[b.size() - 1 - suf]) {
    ++suf;
  }
  const size_t n = a.size() - pre - suf, m = b.size() - pre - suf;
  std::vector<Edit> out;
  for (size_t i = 0; i < pre; ++i) out.push_back({' ', a[i]});
  if (n > 0 && m > 0 && (n + 1) * (m + 1) <= max_cells) {
    // len[i][j] = LCS length of a[pre+i..] and b[pre+j..].
    std::vector<uint32_t> len((n + 1) * (m + 1), 0);
    auto at = [&](size_t i, size_t j) -> uint32_t& { return len[i * (m + 1) + j]; };
    for (size_t i = n; i-- > 0;) {
      for (size_t j = m; j-- > 0;) {
        at(i, j) = a[pre + i] == b[pre + j] ? at(i + 1, j + 1) + 1
                                            : std::max(at(i + 1, j), at(i, j + 1));
      }
    }
    size_t i = 0, j = 0;
    while (i < n && j < m) {
      if (a[pre + i] == b[pre + j]) {
        out.push_back({' ', a[pre + i]});
        ++i;
        ++j;
      } else if (at(i + 1, j) >= at(i, j + 1)) {
        out.push_back({'-', a[pre + i++]});
      } else {
        out.push_back({'+', b[pre + j++]});
      }
    }
    while (i < n) out.push_back({'-', a[pre + i++]});
    while (j < m) out.push_back({'+', b[pre + j++]});
  } else {
    for (size_t i = 0; i < n; ++i) out.push_back({'-', a[pre + i]});
    for (size_t j = 0; j < m; ++j) out.push_back({'+', b[pre + j]});
  }
  for (size_t k = 0; k < suf; ++k) out.push_back({' ', a[a.size() - suf + k]});
  return out;
}

}  // namespace

std::string UnifiedDiff(std::string_view before, std::string_view after, std::string_view a_name,
                        std::string_view b_name, int context, size_t max_cells) {
  if (before == after) return "";
  const auto a = SplitLines(before), b = SplitLines(after);
  const std::vector<Edit> edits = DiffLines(a, b, max_cells);
  const size_t ctx = static_cast<size_t>(std::max(0, context));
  std::string out = "--- ";
  out.append(a_name);
  out += "\n+++ ";
  out.append(b_name);
  out += "\n";
  // Old/new line numbers (1-based) before each edit.
  std::vector<size_t> old_no(edits.size() + 1), new_no(edits.size() + 1);
  old_no[0] = new_no[0] = 1;
  for (size_t k = 0; k < edits.size(); ++k) {
    old_no[k + 1] = old_no[k] + (edits[k].op != '+');
    new_no[k + 1] = new_no[k] + (edits[k].op != '-');
  }
  size_t k = 0;
  while (k < edits.size()) {
    while (k < edits.size() && edits[k].op == ' ') ++k;
    if (k == edits.size()) break;
    // A hunk: from ctx lines before this change to ctx lines after the last
    // change that is within 2*ctx unchanged lines of the previous one.
    const size_t start = k >= ctx ? k - ctx : 0;
    size_t end = k;  // one past the last change
    size_t scan = k;
    while (scan < edits.size()) {
      if (edits[scan].op != ' ') {
        end = scan + 1;
        ++scan;
        continue;
      }
      size_t run = scan;
      while (run < edits.size() && edits[run].op == ' ') ++run;
      if (run == edits.size() || run - scan > 2 * ctx) break;
      scan = run;
    }
    const size_t stop = std::min(edits.size(), end + ctx);
    size_t old_count = 0, new_count = 0;
    for (size_t x = start; x < stop; ++x) {
      old_count += edits[x].op != '+';
      new_count += edits[x].op != '-';
    }
    const size_t old_start = old_count == 0 ? old_no[start] - 1 : old_no[start];
    const size_t new_start = new_count == 0 ? new_no[start] - 1 : new_no[start];
    absl::StrAppend(&out, "@@ -", old_start, ",", old_count, " +", new_start, ",", new_count,
                    " @@\n");
    for (size_t x = start; x < stop; ++x) {
      out += edits[x].op;
      out.append(edits[x].line);
      out += '\n';
    }
    k = stop;
  }
  return out;
}

// -------------------------------------------------------------------- report

namespace {

using v1::EvaluationResult;

std::string E(std::string_view s) { return HtmlEscape(s); }

std::string Clip(const std::string& text, size_t max) {
  if (text.size() <= max) return text;
  return absl::StrCat(text.substr(0, max), "\n[... ", text.size() - max, " more bytes not shown]");
}

std::string StatusText(EvaluationResult::Status s) {
  if (s == EvaluationResult::STATUS_UNSPECIFIED) return "NO_RESULT";
  return EvaluationResult::Status_Name(s);
}

std::string StatusClass(EvaluationResult::Status s) {
  switch (s) {
    case EvaluationResult::OK:
      return "ok";
    case EvaluationResult::COMPILE_ERROR:
      return "ce";
    case EvaluationResult::WRONG_OUTPUT:
    case EvaluationResult::CHEAT_DETECTED:
      return "bad";
    default:
      return "err";
  }
}

std::string StateText(v1::JobState s) {
  switch (s) {
    case v1::JOB_STATE_QUEUED: return "queued";
    case v1::JOB_STATE_RUNNING: return "running";
    case v1::JOB_STATE_SUCCEEDED: return "succeeded";
    case v1::JOB_STATE_FAILED: return "failed";
    case v1::JOB_STATE_CANCELLED: return "cancelled";
    case v1::JOB_STATE_INTERRUPTED: return "interrupted";
    default: return "unknown";
  }
}

std::string AgentText(const v1::AgentConfig& a) {
  switch (a.kind()) {
    case v1::AGENT_KIND_LLM: return "llm";
    case v1::AGENT_KIND_SEARCH: return "search";
    case v1::AGENT_KIND_REPLAY: return "replay";
    default: return "unspecified";
  }
}

std::string StrategyText(const v1::AgentConfig& a) {
  if (a.kind() == v1::AGENT_KIND_SEARCH) {
    return a.search_algorithm().empty() ? "successive_halving" : a.search_algorithm();
  }
  if (a.kind() == v1::AGENT_KIND_REPLAY) return "in order";
  switch (a.strategy().kind()) {
    case v1::STRATEGY_BEST_OF_N: return fmt::format("best_of_n (n={})", a.strategy().n());
    case v1::STRATEGY_TREE: return "tree";
    default: return "sequential";
  }
}

std::string SizeText(const v1::SizeSpec& s) {
  if (s.has_dims()) {
    std::vector<std::string> parts;
    std::map<std::string, int64_t> sorted(s.dims().values().begin(), s.dims().values().end());
    for (const auto& [k, v] : sorted) parts.push_back(absl::StrCat(k, "=", v));
    std::string out;
    for (const auto& p : parts) absl::StrAppend(&out, out.empty() ? "" : ",", p);
    return out;
  }
  return s.preset().empty() ? "default" : s.preset();
}

std::string BudgetText(const v1::Budget& b) {
  std::vector<std::string> parts;
  if (b.wall_seconds() > 0) parts.push_back(fmt::format("{:g} s wall", b.wall_seconds()));
  if (b.max_turns() > 0) parts.push_back(fmt::format("{} turns", b.max_turns()));
  if (b.max_evaluations() > 0) parts.push_back(fmt::format("{} evals", b.max_evaluations()));
  if (b.max_tokens() > 0) parts.push_back(fmt::format("{} tokens", b.max_tokens()));
  if (b.max_cost_usd() > 0) parts.push_back(fmt::format("${:g}", b.max_cost_usd()));
  if (b.target_speedup() > 0) parts.push_back(fmt::format("target {:g}x", b.target_speedup()));
  std::string out;
  for (const auto& p : parts) absl::StrAppend(&out, out.empty() ? "" : ", ", p);
  return out.empty() ? "none" : out;
}

std::string Ms(double ms) {
  if (ms <= 0) return "0";
  if (ms < 10) return fmt::format("{:.2f}", ms);
  if (ms < 1000) return fmt::format("{:.0f}", ms);
  return fmt::format("{:.2f}k", ms / 1000);
}

std::string Seconds(double s) {
  if (s < 60) return fmt::format("{:.1f} s", s);
  if (s < 3600) return fmt::format("{:.0f}m{:02.0f}s", std::floor(s / 60), std::fmod(s, 60));
  return fmt::format("{:.0f}h{:02.0f}m", std::floor(s / 3600), std::fmod(s, 3600) / 60);
}

std::string Us(double us) {
  if (us <= 0) return "&ndash;";
  if (us < 1000) return fmt::format("{:.1f}", us);
  return fmt::format("{:.0f}", us);
}

// A tick step of 1, 2 or 5 times a power of ten giving about `n` ticks.
double NiceStep(double range, int n) {
  if (!(range > 0)) return 1;
  const double raw = range / n;
  const double p = std::pow(10, std::floor(std::log10(raw)));
  const double f = raw / p;
  return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
}

std::string Num(double v) { return fmt::format("{:.1f}", v); }

// % of roofline; above the ceiling a measurement is wrong, not fast (the
// executor flags it as suspicious), so it is never shown as a number alone.
std::string RooflineHtml(double fraction) {
  if (!(fraction > 0)) return "&ndash;";
  if (fraction > 1) {
    return fmt::format("<span class=\"st bad\" title=\"{:.1f}% is above the hardware "
                       "ceiling\">suspect</span>",
                       100 * fraction);
  }
  return fmt::format("{:.1f}%", 100 * fraction);
}

struct PlotPoint {
  double t = 0;
  bool correct = false;
  double speedup = 0;
  int row = 0;  // 1-based evaluation number, for the tooltip
  std::string status;
  // At other settings than the job's (a search rung): drawn hollow, never on
  // the best-so-far line (issue #18 item 5).
  bool other = false;
};

// One plot: per-evaluation speedups (correct: dots; others: crosses on the
// baseline) and the best-so-far step line to the run's end.
// `unit` is the y tick suffix ("x" or "%"); `ref` draws a dashed line there.
std::string RenderPlot(const std::string& title, const std::string& x_label,
                       const std::vector<PlotPoint>& points, const std::vector<storage::Step>& steps,
                       double end_t, std::optional<double> onset, const char* unit = "x",
                       std::optional<double> ref = 1.0, double y_floor = 1.2) {
  const double W = 440, H = 240, L = 46, R = 12, T = 24, B = 36;
  const double pw = W - L - R, ph = H - T - B;
  double x_max = std::max(end_t, 1e-3);
  for (const auto& p : points) x_max = std::max(x_max, p.t);
  double y_max = y_floor;
  for (const auto& p : points) {
    if (p.correct) y_max = std::max(y_max, p.speedup * 1.08);
  }
  if (!(y_max > 0)) y_max = 1;  // nothing to show: an empty 0..1 frame
  const double xs = NiceStep(x_max, 5), ys = NiceStep(y_max, 5);
  x_max = std::ceil(x_max / xs - 1e-9) * xs;
  y_max = std::ceil(y_max / ys - 1e-9) * ys;
  auto X = [&](double t) { return L + pw * std::clamp(t / x_max, 0.0, 1.0); };
  auto Y = [&](double v) { return T + ph * (1 - std::clamp(v / y_max, 0.0, 1.0)); };
  std::string s = fmt::format(
      "<svg class=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" role=\"img\"><title>{2}</title>\n"
      "<text class=\"ptitle\" x=\"{3}\" y=\"15\">{2}</text>\n",
      W, H, E(title), L);
  for (double v = 0; v <= y_max + ys * 1e-6; v += ys) {
    s += fmt::format(
        "<line class=\"grid\" x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\"/>"
        "<text class=\"tick\" x=\"{3}\" y=\"{4}\" text-anchor=\"end\">{5:g}{6}</text>\n",
        L, L + pw, Num(Y(v)), L - 4, Num(Y(v) + 3.5), v, unit);
  }
  for (double t = 0; t <= x_max + xs * 1e-6; t += xs) {
    s += fmt::format(
        "<line class=\"grid\" x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\"/>"
        "<text class=\"tick\" x=\"{0}\" y=\"{3}\" text-anchor=\"middle\">{4:g}</text>\n",
        Num(X(t)), T, T + ph, T + ph + 13, t);
  }
  s += fmt::format(
      "<rect class=\"frame\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>\n"
      "<text class=\"axis\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
      L, T, pw, ph, Num(L + pw / 2), H - 4, E(x_label));
  if (ref) {  // the reference: 1.0x
    s += fmt::format("<line class=\"ref\" x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\"/>\n", L,
                     L + pw, Num(Y(*ref)));
  }
  if (!steps.empty()) {
    std::string d = fmt::format("M{},{}", Num(X(steps[0].t)), Num(Y(steps[0].best)));
    for (size_t i = 1; i < steps.size(); ++i) {
      d += fmt::format(" H{} V{}", Num(X(steps[i].t)), Num(Y(steps[i].best)));
    }
    d += fmt::format(" H{}", Num(X(end_t)));
    s += fmt::format("<path class=\"best\" d=\"{}\"/>\n", d);
  }
  for (const auto& p : points) {
    if (p.correct) {
      s += fmt::format(
          "<circle class=\"pt{}\" cx=\"{}\" cy=\"{}\" r=\"3\"><title>#{} {:.3g}{} at {:.1f} "
          "s{}</title></circle>\n",
          p.other ? " other" : "", Num(X(p.t)), Num(Y(p.speedup)), p.row, p.speedup, unit, p.t,
          p.other ? " (other settings: not on the best line)" : "");
    } else {
      const double x = X(p.t), y = T + ph - 4;
      s += fmt::format(
          "<path class=\"fail\" d=\"M{} {} l6 6 m0 -6 l-6 6\"><title>#{} {} at {:.1f} "
          "s</title></path>\n",
          Num(x - 3), Num(y - 3), p.row, E(p.status), p.t);
    }
  }
  if (onset && !steps.empty()) {
    double best = steps[0].best;
    for (const auto& st : steps) {
      if (st.t <= *onset) best = st.best;
    }
    s += fmt::format(
        "<circle class=\"onset\" cx=\"{}\" cy=\"{}\" r=\"6\"><title>plateau from {:.1f} "
        "s</title></circle>\n",
        Num(X(*onset)), Num(Y(best)), *onset);
  }
  s += "</svg>\n";
  return s;
}

constexpr char kCss[] = R"css(
:root{--fg:#1d232b;--mut:#667085;--line:#e3e7ed;--ok:#1a7f37;--ce:#b35900;--bad:#c62828;--err:#8250df;--acc:#0b63c9}
*{box-sizing:border-box}
body{font:13px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);margin:0;padding:16px 22px;background:#fbfcfd}
h1{font-size:18px;margin:0 0 2px}h2{font-size:14px;margin:18px 0 6px;border-bottom:1px solid var(--line);padding-bottom:3px}
.sub{color:var(--mut);font-size:12px}
code,pre,.mono{font-family:ui-monospace,"JetBrains Mono","DejaVu Sans Mono",Menlo,monospace;font-size:12px}
.kv{display:grid;grid-template-columns:repeat(auto-fill,minmax(150px,1fr));gap:4px 14px;margin:10px 0;padding:8px 10px;background:#fff;border:1px solid var(--line);border-radius:6px}
.kv div{min-width:0;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}.kv b{display:block;font-weight:500;color:var(--mut);font-size:11px}
.big{font-size:16px;font-weight:600}
.plots{display:flex;flex-wrap:wrap;gap:10px}
svg.plot{background:#fff;border:1px solid var(--line);border-radius:6px}
svg .grid{stroke:#eef1f4}svg .frame{fill:none;stroke:#c9d0d8}svg .tick{font-size:10px;fill:var(--mut)}svg .axis{font-size:11px;fill:var(--mut)}
svg .ptitle{font-size:12px;font-weight:600;fill:var(--fg)}svg .ref{stroke:#999;stroke-dasharray:4 3}
svg .best{fill:none;stroke:var(--acc);stroke-width:2}svg .pt{fill:var(--ok);fill-opacity:.75}svg .pt.other{fill:none;stroke:var(--ok);stroke-width:1.2}svg .fail{stroke:var(--bad);stroke-width:1.4}
svg .onset{fill:none;stroke:#d97706;stroke-width:1.6}
.legend{color:var(--mut);font-size:11px;margin:4px 0}.legend i{display:inline-block;width:10px;height:10px;border-radius:5px;vertical-align:-1px;margin:0 3px 0 10px}
table{border-collapse:collapse;width:100%;background:#fff;border:1px solid var(--line)}
th,td{padding:3px 7px;text-align:right;white-space:nowrap;border-bottom:1px solid var(--line)}
th{background:#f3f5f8;font-weight:600;font-size:11px;color:#444;position:sticky;top:0}
td.l,th.l{text-align:left}tr.eval:hover{background:#f5f9ff}tr.best td{background:#eefbf1}
.st{font-weight:600;font-size:11px}.st.ok{color:var(--ok)}.st.ce{color:var(--ce)}.st.bad{color:var(--bad)}.st.err{color:var(--err)}
td.msg{max-width:340px;overflow:hidden;text-overflow:ellipsis}td.turn{max-width:200px;overflow:hidden;text-overflow:ellipsis}
tr.detail td{padding:0 7px 1px 30px;text-align:left;white-space:normal;border-bottom:1px solid var(--line)}
.dl{display:flex;flex-wrap:wrap;column-gap:18px;align-items:baseline}.dl details[open]{flex-basis:100%}
summary{cursor:pointer;color:var(--acc);font-size:11.5px}
pre{margin:4px 0 8px;padding:6px 8px;background:#f6f8fa;border:1px solid var(--line);border-radius:4px;overflow:auto;max-height:420px;white-space:pre}
pre.wrap{white-space:pre-wrap;word-break:break-word}
.diff .a{color:#1a7f37;background:#e9f7ec;display:block}.diff .d{color:#b42318;background:#fdecec;display:block}.diff .h{color:#8250df;display:block}
.src{counter-reset:ln}.src span{display:block}.src span::before{counter-increment:ln;content:counter(ln);display:inline-block;width:3.2em;margin-right:10px;color:#aab;text-align:right}
.note{color:var(--mut)}footer{margin-top:18px;color:var(--mut);font-size:11px}
)css";

std::string Pre(const std::string& text, const char* cls = "wrap") {
  return absl::StrCat("<pre class=\"", cls, "\">", E(text), "</pre>");
}

std::string DiffHtml(const std::string& diff) {
  std::string out = "<pre class=\"diff\">";
  for (std::string_view line : SplitLines(diff)) {
    const char* cls = "";
    if (line.substr(0, 3) == "+++" || line.substr(0, 3) == "---" || line.substr(0, 2) == "@@") {
      cls = "h";
    } else if (!line.empty() && line[0] == '+') {
      cls = "a";
    } else if (!line.empty() && line[0] == '-') {
      cls = "d";
    }
    if (*cls != '\0') {
      absl::StrAppend(&out, "<span class=\"", cls, "\">", E(line), "</span>");
    } else {
      absl::StrAppend(&out, E(line), "\n");
    }
  }
  out += "</pre>";
  return out;
}

}  // namespace

absl::StatusOr<std::string> RenderJobReport(const v1::Trajectory& traj,
                                            const ReportOptions& options) {
  if (!traj.has_job() || traj.job().id().empty()) {
    return absl::InvalidArgumentError("trajectory: no job");
  }
  const v1::Job& job = traj.job();
  const v1::JobSpec& spec = job.spec();
  std::map<std::string, const std::string*> sources;
  for (const auto& c : traj.candidates()) sources[c.sha256()] = &c.source();
  std::map<std::string, const v1::Turn*> turns;
  for (const auto& t : traj.turns()) turns[t.id()] = &t;
  std::map<std::string, std::vector<const v1::LlmCall*>> calls_by_turn;
  for (const auto& c : traj.llm_calls()) calls_by_turn[c.turn_id()].push_back(&c);

  // Curves on both axes, with the definitions of storage/plateau.h.
  storage::JobTrajectory jt;
  jt.job_id = job.id();
  jt.duration_s = static_cast<double>(job.elapsed_ms()) / 1e3;
  std::vector<PlotPoint> wall_pts, active_pts, roof_pts;
  int row = 0;
  for (const auto& e : traj.evaluations()) {
    ++row;
    // The final re-measurement is the job's result (header), not a point of
    // its search.
    if (e.final_measurement()) continue;
    storage::EvalPoint p;
    p.elapsed_s = static_cast<double>(e.elapsed_ms()) / 1e3;
    p.active_s = std::min(e.active_s(), p.elapsed_s);
    p.correct = e.status() == EvaluationResult::OK && e.has_speedup() && e.speedup() > 0;
    p.speedup = p.correct ? e.speedup() : 0;
    p.comparable = !e.other_settings();
    jt.duration_s = std::max(jt.duration_s, p.elapsed_s);
    jt.points.push_back(p);
    wall_pts.push_back(
        {p.elapsed_s, p.correct, p.speedup, row, StatusText(e.status()), e.other_settings()});
    active_pts.push_back(
        {p.active_s, p.correct, p.speedup, row, StatusText(e.status()), e.other_settings()});
    const double roof = e.result().roofline().candidate_fraction();
    if (p.correct && roof > 0) roof_pts.push_back({p.elapsed_s, true, 100 * roof, row, "OK"});
  }
  std::string plots;
  for (storage::TimeAxis axis : {storage::TimeAxis::kElapsed, storage::TimeAxis::kActive}) {
    auto curve = storage::ComputeBestSoFar(jt, axis);
    if (!curve.ok()) return Annotate(curve.status(), "report: best-so-far curve");
    std::optional<double> onset = storage::PlateauOnset(*curve, storage::OnsetOptions());
    const bool wall = axis == storage::TimeAxis::kElapsed;
    plots += RenderPlot(wall ? "Speedup over wall-clock time" : "Speedup over active time",
                        wall ? "wall-clock seconds since job start"
                             : "active seconds (wall minus executor queueing)",
                        wall ? wall_pts : active_pts, curve->steps, curve->end_s, onset);
  }
  // % of roofline of each correct evaluation (what the kernel achieves of
  // the hardware's bound, storage/schema.md roofline_fraction).
  plots += RenderPlot(roof_pts.empty() ? "% of roofline (not measured)" : "% of roofline",
                      "wall-clock seconds since job start", roof_pts, {}, jt.duration_s,
                      std::nullopt, "%", std::nullopt, 0.0);

  std::string h;
  h.reserve(64 * 1024);
  absl::StrAppend(&h, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n",
                  "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\n",
                  "<title>pkforge ", E(spec.problem()), " ", E(job.id()), "</title>\n<style>",
                  kCss, "</style></head>\n<body>\n");

  // Header.
  const std::string best =
      job.has_best_speedup()                  ? fmt::format("{:.3f}x", job.best_speedup())
      : job.other_settings_evaluations() > 0 ? "none at the job's settings"
                                              : "none correct";
  absl::StrAppend(&h, "<header><h1>", E(spec.problem()), " <span class=\"sub mono\">",
                  E(job.id()), "</span></h1>\n<div class=\"sub\">",
                  E(StateText(job.state())),
                  job.stop_reason().empty() ? "" : absl::StrCat(" &middot; ", E(job.stop_reason())),
                  job.error().empty() ? "" : absl::StrCat(" &middot; error: ", E(job.error())),
                  spec.label().empty() ? "" : absl::StrCat(" &middot; label ", E(spec.label())),
                  "</div>\n");
  auto kv = [&](const std::string& k, const std::string& v_html, const char* cls = "") {
    absl::StrAppend(&h, "<div class=\"", cls, "\"><b>", E(k), "</b>", v_html, "</div>");
  };
  absl::StrAppend(&h, "<div class=\"kv\" id=\"job\">");
  // The job's result is its final fresh re-measurement; the best of the
  // search's many measurements is shown beside it (issue #18 item 5).
  const std::string result =
      job.has_final_speedup()
          ? fmt::format("{:.3f}x", job.final_speedup())
          : (job.final_evaluation_id().empty()
                 ? std::string("not measured")
                 : "re-measurement " + StatusText(job.final_status()));
  absl::StrAppend(&h, "<div class=\"big\" id=\"final\"><b>result (fresh re-measurement)</b>",
                  E(result), "</div>");
  kv("best speedup", E(best), "big");
  kv("% of roofline", RooflineHtml(job.has_final_speedup() ? job.final_roofline_fraction()
                                                           : job.best_roofline_fraction()),
     "big");
  if (job.other_settings_evaluations() > 0) {
    absl::StrAppend(
        &h, "<div id=\"other-settings\"><b>other settings</b>",
        E(fmt::format("{} evaluation{} (search rungs){}: not on the best line",
                      job.other_settings_evaluations(),
                      job.other_settings_evaluations() == 1 ? "" : "s",
                      job.has_other_settings_best_speedup()
                          ? fmt::format(", best {:.3f}x", job.other_settings_best_speedup())
                          : "")),
        "</div>");
  }
  kv("backend", E(agent::BackendName(spec.backend())));
  kv("world size", E(absl::StrCat(spec.world_size())));
  const std::string dtype = spec.dtype() == v1::DTYPE_UNSPECIFIED
                                ? std::string("problem default")
                                : std::string(agent::DtypeName(spec.dtype()));
  kv("dtype", E(dtype));
  kv("size", E(SizeText(spec.size())));
  kv("agent", E(AgentText(spec.agent())));
  kv("model", E(spec.agent().llm().model().empty() ? "-" : spec.agent().llm().model()));
  kv("strategy", E(StrategyText(spec.agent())));
  kv("budget", E(BudgetText(spec.budget())));
  kv("state", E(StateText(job.state())));
  kv("run time", E(Seconds(static_cast<double>(job.elapsed_ms()) / 1e3)));
  kv("evaluations", E(absl::StrCat(job.evaluations(),
                                   job.final_evaluation_id().empty() ? "" : " + 1 re-measurement")));
  kv("turns", E(absl::StrCat(job.turns())));
  kv("tokens / cost", E(fmt::format("{} / ${:.4f}", job.tokens(), job.cost_usd())));
  h += "</div></header>\n";

  // Plots.
  absl::StrAppend(&h, "<section id=\"plots\"><h2>Trajectory</h2><div class=\"plots\">", plots,
                  "</div><div class=\"legend\"><i style=\"background:#1a7f37\"></i>correct "
                  "evaluation<i style=\"border:1.2px solid #1a7f37;background:none\"></i>at other "
                  "settings (search rung, not on the best line)"
                  "<i style=\"background:#0b63c9;border-radius:0;height:3px\"></i>best "
                  "so far at the job's settings<i style=\"background:#c62828;border-radius:0\"></i>failed (on the "
                  "baseline)<i style=\"border:1.6px solid #d97706;background:none\"></i>plateau "
                  "onset (&lt;1% gain after it) &middot; dashed: reference (1.0x)</div></section>\n");

  // Table.
  h += "<section id=\"steps\"><h2>Evaluations</h2><table id=\"evals\"><thead><tr>"
       "<th>#</th><th>wall s</th><th>active s</th><th class=\"l\">status</th><th>speedup</th>"
       "<th>cand &micro;s</th><th>ref &micro;s</th><th>roofline</th><th>queue ms</th>"
       "<th>compile ms</th><th>run ms</th><th class=\"l\">turn</th><th class=\"l\">candidate</th>"
       "<th class=\"l\">message</th></tr></thead><tbody>\n";
  const std::string* prev_source = nullptr;
  std::string prev_sha;
  std::set<std::string> turns_with_llm_shown;
  row = 0;
  for (const auto& e : traj.evaluations()) {
    ++row;
    const EvaluationResult& r = e.result();
    const bool is_best = !job.best_evaluation_id().empty() && e.id() == job.best_evaluation_id();
    const char* kind = e.final_measurement() ? " final" : e.other_settings() ? " other" : "";
    const std::string label =
        e.final_measurement()
            ? " (final re-measurement)"
            : e.other_settings() ? fmt::format(" (other settings: {} timed iterations)",
                                               e.timed_iters())
                                 : std::string();
    const auto turn_it = turns.find(e.turn_id());
    std::string turn_text = "-";
    if (turn_it != turns.end()) {
      turn_text = absl::StrCat(turn_it->second->index(),
                               turn_it->second->note().empty() ? "" : " ",
                               turn_it->second->note());
    }
    const double roof = r.roofline().candidate_fraction();
    absl::StrAppend(
        &h, "<tr class=\"eval", is_best ? " best" : "", kind, "\" id=\"", E(e.id()), "\"><td>", row,
        "</td><td>", fmt::format("{:.1f}", static_cast<double>(e.elapsed_ms()) / 1e3),
        "</td><td>", fmt::format("{:.1f}", e.active_s()), "</td><td class=\"l\"><span class=\"st ",
        StatusClass(e.status()), "\">", E(StatusText(e.status())), "</span>", E(label),
        "</td><td>",
        e.has_speedup() ? fmt::format("{:.3f}x", e.speedup()) : "&ndash;", "</td><td>",
        Us(r.candidate().median_us()), "</td><td>", Us(r.reference().median_us()), "</td><td>",
        RooflineHtml(roof), "</td><td>",
        Ms(e.stages().queue_ms()), "</td><td>", Ms(e.stages().compile_ms()),
        r.compile().cache_hit() ? " (hit)" : "", "</td><td>", Ms(e.stages().run_ms()),
        "</td><td class=\"l turn\" title=\"", E(turn_text), "\">", E(turn_text),
        "</td><td class=\"l mono\">", E(e.candidate_sha256().substr(0, 10)),
        "</td><td class=\"l msg\" title=\"", E(r.message()), "\">", E(r.message()),
        "</td></tr>\n");

    // Details of this evaluation.
    std::string d;
    if (e.has_result()) {
      absl::StrAppend(&d, "<details><summary>",
                      spec.agent().kind() == v1::AGENT_KIND_LLM
                          ? "feedback given to the agent"
                          : "evaluation report (as an LLM agent is given it)",
                      "</summary>",
                      Pre(Clip(agent::RenderResult(r), options.max_text_chars)), "</details>");
      if (!r.compile().output().empty()) {
        absl::StrAppend(&d, "<details", e.status() == EvaluationResult::COMPILE_ERROR ? " open" : "",
                        "><summary>compiler output (", E(r.compile().compiler()),
                        ")</summary>", Pre(Clip(r.compile().output(), options.max_text_chars)),
                        "</details>");
      }
      if (!r.profile().kernels().empty() || !r.profile().text().empty() ||
          !r.profile().error().empty()) {
        std::string p;
        for (const auto& k : r.profile().kernels()) {
          p += fmt::format("{:<40} x{:<4} {:>9.2f} us  dram {:5.1f}%  sm {:5.1f}%  occ {:5.1f}%\n",
                           k.name(), k.invocations(), k.duration_us(), k.dram_throughput_pct(),
                           k.sm_throughput_pct(), k.achieved_occupancy_pct());
        }
        if (!r.profile().text().empty()) absl::StrAppend(&p, "\n", r.profile().text());
        if (!r.profile().error().empty()) absl::StrAppend(&p, "\nerror: ", r.profile().error());
        absl::StrAppend(&d, "<details><summary>profiler (", E(r.profile().tool()), ")</summary>",
                        Pre(Clip(p, options.max_text_chars), "prof"), "</details>");
      }
      if (!r.sanitizer().tool().empty()) {
        absl::StrAppend(&d, "<details><summary>sanitizer (", E(r.sanitizer().tool()), ", ",
                        r.sanitizer().errors(), " errors)</summary>",
                        Pre(Clip(r.sanitizer().text() + r.sanitizer().error(),
                                 options.max_text_chars)),
                        "</details>");
      }
    }
    // The LLM reply that produced this turn's candidates (once per turn).
    if (auto it = calls_by_turn.find(e.turn_id());
        it != calls_by_turn.end() && !e.turn_id().empty() &&
        turns_with_llm_shown.insert(e.turn_id()).second) {
      for (const v1::LlmCall* c : it->second) {
        absl::StrAppend(&d, "<details><summary>LLM reply (", E(c->model()), ", ",
                        c->prompt_tokens(), "+", c->completion_tokens(), " tokens, ",
                        fmt::format("{:.1f}", c->latency_ms() / 1e3), " s",
                        c->error().empty() ? "" : absl::StrCat(", error: ", E(c->error())),
                        ")</summary>", Pre(Clip(c->reply(), options.max_text_chars)),
                        "</details>");
      }
    }
    auto src = sources.find(e.candidate_sha256());
    if (src != sources.end() && !src->second->empty()) {
      if (prev_source == nullptr) {
        absl::StrAppend(&d, "<details><summary>source (first candidate, ",
                        std::count(src->second->begin(), src->second->end(), '\n'),
                        " lines)</summary>", Pre(Clip(*src->second, options.max_diff_chars), "src"),
                        "</details>");
      } else if (prev_sha == e.candidate_sha256()) {
        d += "<span class=\"note\">same candidate as the previous evaluation</span>";
      } else {
        std::string diff =
            UnifiedDiff(*prev_source, *src->second, "previous/" + prev_sha.substr(0, 10),
                        "this/" + e.candidate_sha256().substr(0, 10));
        size_t added = 0, removed = 0;
        for (std::string_view line : SplitLines(diff)) {
          if (line.substr(0, 3) == "+++" || line.substr(0, 3) == "---") continue;
          added += !line.empty() && line[0] == '+';
          removed += !line.empty() && line[0] == '-';
        }
        absl::StrAppend(&d, "<details><summary>diff against the previous candidate (+", added,
                        " &minus;", removed, ")</summary>",
                        DiffHtml(Clip(diff, options.max_diff_chars)), "</details>");
      }
      prev_source = src->second;
      prev_sha = e.candidate_sha256();
    }
    absl::StrAppend(&h, "<tr class=\"detail\"><td colspan=\"14\"><div class=\"dl\">", d,
                    "</div></td></tr>\n");
  }
  h += "</tbody></table></section>\n";

  // Best candidate: the one the job's result measured (the agent's choice),
  // else the best at the job's settings.
  const std::string& best_sha = job.final_candidate_sha256().empty()
                                    ? job.best_candidate_sha256()
                                    : job.final_candidate_sha256();
  h += "<section id=\"best\"><h2>Best candidate</h2>";
  auto best_src = sources.find(best_sha);
  if (best_sha.empty()) {
    h += "<p class=\"note\">No correct candidate.</p>";
  } else if (best_src == sources.end() || best_src->second->empty()) {
    absl::StrAppend(&h, "<p class=\"note\">", E(best_sha), ": source not included.</p>");
  } else {
    absl::StrAppend(&h, "<p class=\"sub mono\">sha256 ", E(best_sha), " &middot; ",
                    E(job.final_candidate_sha256().empty() ? best : "result " + result),
                    "</p><pre class=\"src\" id=\"best-source\">");
    for (std::string_view line : SplitLines(*best_src->second)) {
      absl::StrAppend(&h, "<span>", E(line), "</span>");
    }
    h += "</pre>";
  }
  h += "</section>\n<footer>";
  absl::StrAppend(&h, E(options.generated_by));
  if (options.generated_wall_us > 0) {
    const std::time_t secs = static_cast<std::time_t>(options.generated_wall_us / 1000000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    absl::StrAppend(&h, fmt::format(" &middot; {:04}-{:02}-{:02} {:02}:{:02} UTC", tm.tm_year + 1900,
                                    tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min));
  }
  h += " &middot; times: wall = since job start; active = wall minus executor queueing</footer>\n"
       "</body></html>\n";
  return h;
}

// ------------------------------------------------------------------- offline

absl::StatusOr<v1::Trajectory> LoadReportTrajectory(const std::string& db,
                                                    const std::string& job_id) {
  RETURN_IF_ERROR(Annotate(ValidateId(job_id, "job"), "job"));
  ASSIGN_OR_RETURN(std::unique_ptr<storage::TrajectoryStore> store, OpenDb(db));
  convert::TrajectoryOptions options;
  options.include_sources = options.include_llm_text = options.include_results = true;
  return convert::LoadTrajectory(*store, job_id, options, SystemClock::Get()->NowWallMicros());
}

}  // namespace pkforge::cli

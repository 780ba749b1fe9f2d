#include "storage/plateau_export.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "storage/plateau.h"

namespace pkforge::storage {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

// ----------------------------------------------------------------- fixtures

JobTrajectory StepJob(std::string id, std::string model, double duration,
                      const std::vector<Step>& steps) {
  JobTrajectory j;
  j.job_id = std::move(id);
  j.problem = "allreduce";
  j.model = std::move(model);
  j.strategy = "sequential";
  j.agent_kind = "llm";
  j.duration_s = duration;
  j.points.push_back({0.5, 0.5, false, 0});
  for (const Step& s : steps) j.points.push_back({s.t, s.t, true, s.best});
  return j;
}

// Five jobs, two of them with hostile names; one never correct.
std::vector<JobTrajectory> Jobs() {
  std::vector<JobTrajectory> jobs = {
      StepJob("job_a", "gpt<4>&\"o\"", 100, {{10, 1.0}, {20, 2.0}}),  // onset 20
      StepJob("job_b", "gpt<4>&\"o\"", 120, {{30, 0.5}, {60, 1.5}, {110, 1.6}}),
      StepJob("job_c", "claude's", 90, {{5, 3.0}}),
      StepJob("job_<d>&", "claude's", 80, {}),  // never correct
      StepJob("job_e", "bad\xff\x01utf8", 50, {{25, 1.25}}),
  };
  jobs[0].label = "exp,1 \"quoted\"";
  return jobs;
}

PlateauReport Report(PlateauOptions o = {}) {
  o.group_by = {GroupKey::kModel};
  o.budgets_s = {30, 200};
  absl::StatusOr<PlateauReport> r = BuildPlateauReport(Jobs(), o);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : PlateauReport{};
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// A minimal RFC 4180 reader, so quoting is checked by parsing, not by eye.
std::vector<std::vector<std::string>> ParseCsv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, field_started = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"' && !field_started) {
      quoted = field_started = true;
    } else if (c == ',') {
      row.push_back(field);
      field.clear();
      field_started = false;
    } else if (c == '\n') {
      row.push_back(field);
      rows.push_back(row);
      row.clear();
      field.clear();
      field_started = false;
    } else {
      field += c;
      field_started = true;
    }
  }
  EXPECT_TRUE(row.empty() && field.empty()) << "CSV must end with a newline";
  return rows;
}

size_t Count(std::string_view haystack, std::string_view needle) {
  size_t n = 0;
  for (size_t pos = haystack.find(needle); pos != std::string_view::npos;
       pos = haystack.find(needle, pos + needle.size())) {
    ++n;
  }
  return n;
}

// ---------------------------------------------------- XML well-formedness check

// Structural check of the subset of XML the SVG writer produces: one root
// element, balanced and properly nested tags, quoted and unique attributes,
// only the five predefined entities or numeric references, no raw '<' or '&'
// in text or attribute values, valid UTF-8 with no control characters.
// Returns "" when well-formed, else what is wrong. Always run (xmllint may be
// missing), in addition to xmllint when it is installed.
std::string XmlProblem(std::string_view doc) {
  // UTF-8 and forbidden characters first.
  for (size_t i = 0; i < doc.size();) {
    const auto c = static_cast<unsigned char>(doc[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + len > doc.size()) return "invalid UTF-8 at byte " + std::to_string(i);
    for (size_t k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(doc[i + k]) & 0xC0) != 0x80) {
        return "invalid UTF-8 at byte " + std::to_string(i);
      }
    }
    if (len == 1 && c < 0x20 && c != '\n' && c != '\r' && c != '\t') {
      return "control character at byte " + std::to_string(i);
    }
    i += len;
  }
  auto entity_ok = [&](size_t amp) {
    const size_t semi = doc.find(';', amp);
    if (semi == std::string_view::npos || semi - amp > 10) return false;
    std::string_view name = doc.substr(amp + 1, semi - amp - 1);
    if (name == "amp" || name == "lt" || name == "gt" || name == "quot" || name == "apos") {
      return true;
    }
    return name.size() >= 2 && name[0] == '#';
  };
  auto is_name_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == ':' ||
           c == '.';
  };
  std::vector<std::string> stack;
  int roots = 0;
  size_t i = 0;
  if (doc.substr(0, 5) == "<?xml") {
    i = doc.find("?>");
    if (i == std::string_view::npos) return "unterminated XML declaration";
    i += 2;
  }
  while (i < doc.size()) {
    if (doc[i] != '<') {
      if (doc[i] == '&' && !entity_ok(i)) return "bad entity at byte " + std::to_string(i);
      if (doc[i] == '>') return "raw '>' in text at byte " + std::to_string(i);
      if (stack.empty() && !std::isspace(static_cast<unsigned char>(doc[i]))) {
        return "text outside the root element at byte " + std::to_string(i);
      }
      ++i;
      continue;
    }
    if (doc.substr(i, 4) == "<!--") {
      size_t end = doc.find("-->", i);
      if (end == std::string_view::npos) return "unterminated comment";
      i = end + 3;
      continue;
    }
    const bool closing = i + 1 < doc.size() && doc[i + 1] == '/';
    size_t p = i + (closing ? 2 : 1);
    const size_t name_start = p;
    while (p < doc.size() && is_name_char(doc[p])) ++p;
    std::string name(doc.substr(name_start, p - name_start));
    if (name.empty()) return "empty tag name at byte " + std::to_string(i);
    if (closing) {
      while (p < doc.size() && std::isspace(static_cast<unsigned char>(doc[p]))) ++p;
      if (p >= doc.size() || doc[p] != '>') return "bad closing tag </" + name;
      if (stack.empty() || stack.back() != name) {
        return "closing </" + name + "> does not match <" + (stack.empty() ? "" : stack.back()) +
               ">";
      }
      stack.pop_back();
      i = p + 1;
      continue;
    }
    std::set<std::string> attributes;
    bool self_closing = false;
    while (true) {
      const size_t before = p;
      while (p < doc.size() && std::isspace(static_cast<unsigned char>(doc[p]))) ++p;
      if (p >= doc.size()) return "unterminated tag <" + name;
      if (doc[p] == '>') break;
      if (doc.substr(p, 2) == "/>") {
        self_closing = true;
        ++p;
        break;
      }
      if (p == before) return "missing space before attribute in <" + name;
      const size_t attr_start = p;
      while (p < doc.size() && is_name_char(doc[p])) ++p;
      std::string attr(doc.substr(attr_start, p - attr_start));
      if (attr.empty()) return "bad attribute in <" + name;
      if (!attributes.insert(attr).second) return "duplicate attribute " + attr + " in <" + name;
      if (p + 1 >= doc.size() || doc[p] != '=' || (doc[p + 1] != '"' && doc[p + 1] != '\'')) {
        return "attribute " + attr + " in <" + name + " is not name=\"value\"";
      }
      const char quote = doc[p + 1];
      p += 2;
      const size_t value_end = doc.find(quote, p);
      if (value_end == std::string_view::npos) return "unterminated attribute " + attr;
      for (size_t k = p; k < value_end; ++k) {
        if (doc[k] == '<') return "raw '<' in attribute " + attr;
        if (doc[k] == '&' && !entity_ok(k)) return "bad entity in attribute " + attr;
      }
      p = value_end + 1;
    }
    if (stack.empty()) ++roots;
    if (roots > 1) return "more than one root element";
    if (!self_closing) stack.push_back(name);
    i = p + 1;
  }
  if (!stack.empty()) return "unclosed <" + stack.back() + ">";
  if (roots != 1) return "no root element";
  return "";
}

// "" when xmllint accepts `doc` or is not installed; otherwise its complaint.
std::string XmllintProblem(const std::string& doc) {
  if (std::system("command -v xmllint >/dev/null 2>&1") != 0) return "";
  char path[] = "/tmp/plateau_svg_XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return "mkstemp failed";
  close(fd);
  {
    std::ofstream f(path, std::ios::binary);
    f << doc;
  }
  const std::string log = std::string(path) + ".log";
  const int rc =
      std::system(("xmllint --noout '" + std::string(path) + "' 2>'" + log + "'").c_str());
  std::ifstream in(log);
  std::string complaint((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::remove(path);
  std::remove(log.c_str());
  return rc == 0 ? "" : "xmllint: " + complaint;
}

void ExpectWellFormed(const std::string& svg) {
  EXPECT_EQ(XmlProblem(svg), "");
  EXPECT_EQ(XmllintProblem(svg), "");
}

TEST(XmlCheckerTest, CatchesMalformedDocuments) {
  EXPECT_EQ(XmlProblem("<a x=\"1\"><b/>t &amp; t</a>"), "");
  EXPECT_NE(XmlProblem("<a><b></a></b>"), "");
  EXPECT_NE(XmlProblem("<a>x < y</a>"), "");
  EXPECT_NE(XmlProblem("<a>AT&T</a>"), "");
  EXPECT_NE(XmlProblem("<a x=1/>"), "");
  EXPECT_NE(XmlProblem("<a x=\"1\" x=\"2\"/>"), "");
  EXPECT_NE(XmlProblem("<a/><b/>"), "");
  EXPECT_NE(XmlProblem("<a>\xff</a>"), "");
  EXPECT_NE(XmlProblem("<a>"), "");
  EXPECT_NE(XmllintProblem("<a><b></a>"), "") << "xmllint installed but accepted garbage?";
}

// ------------------------------------------------------------------------ CSV

TEST(PlateauExportCsvTest, JobSummary) {
  PlateauReport r = Report();
  const std::string csv = JobSummaryCsv(r);
  std::vector<std::vector<std::string>> rows = ParseCsv(csv);
  ASSERT_EQ(rows.size(), 1 + r.jobs.size());
  EXPECT_EQ(Lines(csv)[0],
            "job_id,problem,model,strategy,agent_kind,label,axis,end_s,evaluations,"
            "correct_evaluations,first_correct_s,final_best,time_to_50pct_s,time_to_90pct_s,"
            "time_to_99pct_s,plateau_onset_s,best_at_onset,best_multi_size_score,"
            "other_settings_evaluations,other_settings_best");
  for (const auto& row : rows) ASSERT_EQ(row.size(), rows[0].size());
  // job_a: quoting survives a round trip.
  EXPECT_EQ(rows[1][0], "job_a");
  EXPECT_EQ(rows[1][2], "gpt<4>&\"o\"");
  EXPECT_EQ(rows[1][5], "exp,1 \"quoted\"");
  EXPECT_EQ(rows[1][6], "elapsed");
  EXPECT_EQ(rows[1][7], "100");
  EXPECT_EQ(rows[1][8], "3");  // one wrong point + two correct
  EXPECT_EQ(rows[1][9], "2");
  EXPECT_EQ(rows[1][10], "10");
  EXPECT_EQ(rows[1][11], "2");
  EXPECT_EQ(rows[1][12], "10");  // 1.0 >= 0.5 * 2.0
  EXPECT_EQ(rows[1][13], "20");
  EXPECT_EQ(rows[1][15], "20");
  EXPECT_EQ(rows[1][16], "2");
  // The never-correct job: empty fields, not zeros.
  EXPECT_EQ(rows[4][0], "job_<d>&");
  EXPECT_EQ(rows[4][10], "");
  EXPECT_EQ(rows[4][11], "");
  EXPECT_EQ(rows[4][15], "");

  PlateauOptions o;
  o.fractions = {0.995, 0.29};
  EXPECT_THAT(Lines(JobSummaryCsv(Report(o)))[0],
              HasSubstr("time_to_99.5pct_s,time_to_29pct_s,plateau_onset_s"));
}

TEST(PlateauExportCsvTest, CurvesLongFormat) {
  PlateauReport r = Report();
  std::vector<std::vector<std::string>> rows = ParseCsv(CurveCsv(r));
  size_t steps = 0;
  for (const JobSummary& j : r.jobs) steps += j.curve.steps.size();
  ASSERT_EQ(steps, 7u);
  ASSERT_EQ(rows.size(), 1 + steps + r.jobs.size());  // header, steps, one end row per job
  EXPECT_EQ(rows[0], (std::vector<std::string>{"job_id", "t", "best", "event"}));
  EXPECT_EQ(rows[1], (std::vector<std::string>{"job_a", "10", "1", "improved"}));
  EXPECT_EQ(rows[2], (std::vector<std::string>{"job_a", "20", "2", "improved"}));
  EXPECT_EQ(rows[3], (std::vector<std::string>{"job_a", "100", "2", "end"}));
  EXPECT_EQ(rows[10], (std::vector<std::string>{"job_<d>&", "80", "", "end"}));
}

TEST(PlateauExportCsvTest, GroupFastPAndTruncationTables) {
  PlateauReport r = Report();
  std::vector<std::vector<std::string>> rows = ParseCsv(GroupCurveCsv(r));
  size_t points = 0;
  for (const GroupSummary& g : r.groups) points += g.curve.size();
  EXPECT_EQ(rows.size(), 1 + points);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"group", "t", "median", "p10", "p90", "jobs_correct",
                                               "jobs_running"}));

  rows = ParseCsv(FastPCsv(r));
  const size_t grid = r.options.time_grid.size();
  EXPECT_EQ(rows.size(), 1 + (1 + r.groups.size()) * r.options.fast_p.size() * grid);
  EXPECT_EQ(rows[1][0], "(all jobs)");
  EXPECT_EQ(rows[0], (std::vector<std::string>{"group", "p", "t", "share", "jobs_running"}));

  rows = ParseCsv(TruncationCsv(r));
  ASSERT_EQ(rows.size(), 1 + (1 + r.groups.size()) * 2);
  EXPECT_EQ(rows[1][0], "(all jobs)");
  EXPECT_EQ(rows[1][1], "30");
  EXPECT_EQ(rows[1][2], "5");
  EXPECT_EQ(rows[1][3], "4");  // a (2.0), b (0.5), c (3.0), e (1.25) by 30 s
}

// ----------------------------------------------------------------------- JSON

TEST(PlateauExportJsonTest, ParsesAndRoundTripsKeyNumbers) {
  PlateauOptions o;
  o.onset.window_s = 40;
  PlateauReport r = Report(o);
  absl::StatusOr<std::string> text = ReportToJson(r);
  ASSERT_TRUE(text.ok()) << text.status();
  json doc = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(doc.is_discarded()) << *text;

  EXPECT_EQ(doc["axis"], "elapsed");
  EXPECT_EQ(doc["options"]["window_s"], 40.0);
  EXPECT_EQ(doc["options"]["group_by"], json::array({"model"}));
  ASSERT_EQ(doc["jobs"].size(), r.jobs.size());
  for (size_t i = 0; i < r.jobs.size(); ++i) {
    const JobSummary& j = r.jobs[i];
    const json& dj = doc["jobs"][i];
    EXPECT_EQ(dj["job_id"], j.job_id);
    EXPECT_EQ(dj["end_s"].get<double>(), j.curve.end_s);
    ASSERT_EQ(dj["curve"].size(), j.curve.steps.size());
    for (size_t k = 0; k < j.curve.steps.size(); ++k) {
      EXPECT_EQ(dj["curve"][k][0].get<double>(), j.curve.steps[k].t);
      EXPECT_EQ(dj["curve"][k][1].get<double>(), j.curve.steps[k].best);
    }
    if (j.final_best) {
      EXPECT_EQ(dj["final_best"].get<double>(), *j.final_best);
    } else {
      EXPECT_TRUE(dj["final_best"].is_null());
      EXPECT_TRUE(dj["first_correct_s"].is_null());
      EXPECT_TRUE(dj["plateau_onset_s"].is_null());
    }
    if (j.plateau_onset_s) {
      EXPECT_EQ(dj["plateau_onset_s"].get<double>(), *j.plateau_onset_s);
    }
  }
  EXPECT_EQ(doc["jobs"][0]["model"], "gpt<4>&\"o\"");
  EXPECT_EQ(doc["jobs"][0]["plateau_onset_s"], 20.0);  // best(60) = 2.0 = best(20)
  EXPECT_EQ(doc["jobs"][0]["time_to_fraction"][1]["fraction"], 0.9);
  EXPECT_EQ(doc["jobs"][0]["time_to_fraction"][1]["t_s"], 20.0);
  // Invalid UTF-8 in a name does not break the document.
  EXPECT_THAT(doc["jobs"][4]["model"].get<std::string>(), HasSubstr("\xEF\xBF\xBD"));

  ASSERT_EQ(doc["groups"].size(), r.groups.size());
  for (size_t g = 0; g < r.groups.size(); ++g) {
    const GroupSummary& gs = r.groups[g];
    const json& dg = doc["groups"][g];
    if (gs.key_values[0].find('\xff') == std::string::npos) {
      EXPECT_EQ(dg["name"], gs.name);
      EXPECT_EQ(dg["keys"]["model"], gs.key_values[0]);
    } else {  // invalid UTF-8, replaced
      EXPECT_EQ(dg["name"], "bad\xEF\xBF\xBD\x01utf8");
    }
    EXPECT_EQ(dg["jobs"], gs.jobs);
    EXPECT_EQ(dg["share_correct"].get<double>(), gs.share_correct);
    ASSERT_EQ(dg["curve"].size(), gs.curve.size());
    EXPECT_EQ(dg["curve"].back()["median"].get<double>(), gs.curve.back().median);
    EXPECT_EQ(dg["curve"].back()["p90"].get<double>(), gs.curve.back().p90);
    EXPECT_EQ(dg["job_ids"].size(), gs.job_indices.size());
  }
  ASSERT_EQ(doc["fast_p"].size(), 4u);
  EXPECT_EQ(doc["fast_p"][0]["points"].back()["share"].get<double>(), 0.8);
  ASSERT_EQ(doc["truncation"].size(), 2u);
  EXPECT_EQ(doc["truncation"][0]["median_best"].get<double>(), *r.truncation[0].median_best);
  EXPECT_EQ(doc["truncation"][0]["geomean_best"].get<double>(), *r.truncation[0].geomean_best);

  absl::StatusOr<std::string> compact = ReportToJson(r, -1);
  ASSERT_TRUE(compact.ok());
  EXPECT_EQ(compact->find('\n'), std::string::npos);
  EXPECT_EQ(json::parse(*compact), doc);
}

// ------------------------------------------------------------------------ SVG

TEST(PlateauExportSvgTest, JobsModeOneSeriesPerCorrectJob) {
  PlateauReport r = Report();
  SvgOptions o;
  o.mode = SvgMode::kJobs;
  absl::StatusOr<std::string> svg = RenderPlateauSvg(r, o);
  ASSERT_TRUE(svg.ok()) << svg.status();
  ExpectWellFormed(*svg);
  EXPECT_EQ(Count(*svg, "class=\"series\""), 4u);  // job_<d>& was never correct
  EXPECT_EQ(Count(*svg, "<path class=\"series\""), 4u);
  EXPECT_THAT(*svg, HasSubstr("1 job never correct (not drawn)"));
  EXPECT_THAT(*svg, HasSubstr("elapsed time (s)"));
  EXPECT_THAT(*svg, HasSubstr("best speedup over reference (x)"));
  EXPECT_THAT(*svg, HasSubstr("class=\"reference\""));
  EXPECT_THAT(*svg, HasSubstr("stroke-dasharray=\"6 4\""));
  EXPECT_EQ(Count(*svg, "class=\"legend-entry\""), 4u);
  // Onsets: job_a (20), job_c (5), job_e (25); job_b improves at 110 of 120.
  EXPECT_EQ(Count(*svg, "<circle class=\"onset\""), 3u);
  // Escaped, never raw.
  EXPECT_THAT(*svg, Not(HasSubstr("gpt<4>")));
  EXPECT_THAT(*svg, HasSubstr("gpt&lt;4&gt;&amp;&quot;o&quot;"));
  // A step line: horizontal then vertical segments only, ending at the run's end.
  const size_t d = svg->find("<path class=\"series\" d=\"M");
  ASSERT_NE(d, std::string::npos);
  const std::string path = svg->substr(d, svg->find('"', d + 26) - d);
  EXPECT_THAT(path, HasSubstr(" H"));
  EXPECT_THAT(path, HasSubstr(" V"));
  EXPECT_THAT(path, Not(HasSubstr(" L")));
}

TEST(PlateauExportSvgTest, GroupsModeWithBands) {
  PlateauReport r = Report();
  absl::StatusOr<std::string> svg = RenderPlateauSvg(r);  // kGroups by default
  ASSERT_TRUE(svg.ok()) << svg.status();
  ExpectWellFormed(*svg);
  ASSERT_EQ(r.groups.size(), 3u);
  EXPECT_EQ(Count(*svg, "class=\"series\""), 3u);
  EXPECT_EQ(Count(*svg, "class=\"band\""), 3u);
  EXPECT_THAT(*svg, HasSubstr("claude&apos;s"));
  EXPECT_THAT(*svg, HasSubstr("\xEF\xBF\xBD"));  // the bad bytes, replaced
  EXPECT_THAT(*svg, HasSubstr("10-90%"));

  SvgOptions no_band;
  no_band.show_band = false;
  no_band.show_onsets = false;
  no_band.title = "A <custom> title";
  svg = RenderPlateauSvg(r, no_band);
  ASSERT_TRUE(svg.ok());
  ExpectWellFormed(*svg);
  EXPECT_EQ(Count(*svg, "class=\"series\""), 3u);
  EXPECT_EQ(Count(*svg, "class=\"band\""), 0u);
  EXPECT_EQ(Count(*svg, "class=\"onset\""), 0u);
  EXPECT_THAT(*svg, HasSubstr("A &lt;custom&gt; title"));
}

TEST(PlateauExportSvgTest, LogXAndActiveAxis) {
  PlateauOptions po;
  po.axis = TimeAxis::kActive;
  PlateauReport r = Report(po);
  SvgOptions o;
  o.mode = SvgMode::kJobs;
  o.log_x = true;
  absl::StatusOr<std::string> svg = RenderPlateauSvg(r, o);
  ASSERT_TRUE(svg.ok()) << svg.status();
  ExpectWellFormed(*svg);
  EXPECT_EQ(Count(*svg, "class=\"series\""), 4u);
  EXPECT_THAT(*svg, HasSubstr("active time (s), log scale"));
  // 1-2-5 ticks from the decade below the first step (5 s) up to the longest run (120 s).
  EXPECT_THAT(*svg, HasSubstr(">1<"));
  EXPECT_THAT(*svg, HasSubstr(">50<"));
  EXPECT_THAT(*svg, HasSubstr(">100<"));
  EXPECT_THAT(*svg, Not(HasSubstr(">200<")));
  EXPECT_THAT(*svg, Not(HasSubstr("nan")));
  EXPECT_THAT(*svg, Not(HasSubstr("inf")));
}

TEST(PlateauExportSvgTest, LogXOverManyDecadesKeepsTicksFew) {
  absl::StatusOr<PlateauReport> r =
      BuildPlateauReport({StepJob("j", "m", 1e9, {{1e-6, 1.5}, {10, 2.0}})}, {});
  ASSERT_TRUE(r.ok()) << r.status();
  SvgOptions o;
  o.mode = SvgMode::kJobs;
  o.log_x = true;
  absl::StatusOr<std::string> svg = RenderPlateauSvg(*r, o);
  ASSERT_TRUE(svg.ok()) << svg.status();
  ExpectWellFormed(*svg);
  EXPECT_LE(Count(*svg, "class=\"tick-label\""), 30u);  // ~12 on x, the rest on y
  EXPECT_THAT(*svg, HasSubstr(">1e-06<"));
}

TEST(PlateauExportSvgTest, ManySeriesRepeatColoursWithDashesAndSummariseTheLegend) {
  std::vector<JobTrajectory> jobs;
  for (int i = 0; i < 40; ++i) {
    jobs.push_back(StepJob("job_" + std::to_string(i), "m", 100,
                           {{1.0 + i, 1.0 + 0.01 * i}, {50.0 + i, 1.5 + 0.02 * i}}));
  }
  absl::StatusOr<PlateauReport> r = BuildPlateauReport(jobs, {});
  ASSERT_TRUE(r.ok()) << r.status();
  SvgOptions o;
  o.mode = SvgMode::kJobs;
  o.max_legend_entries = 12;
  absl::StatusOr<std::string> svg = RenderPlateauSvg(*r, o);
  ASSERT_TRUE(svg.ok()) << svg.status();
  ExpectWellFormed(*svg);
  EXPECT_EQ(Count(*svg, "<path class=\"series\""), 40u);
  EXPECT_EQ(Count(*svg, "class=\"legend-entry\""), 11u);
  EXPECT_THAT(*svg, HasSubstr("+29 more"));
  EXPECT_THAT(*svg, HasSubstr("stroke-dasharray=\"7 3\""));  // series 10..19
}

TEST(PlateauExportSvgTest, EmptyReportAndBadSizes) {
  absl::StatusOr<PlateauReport> r = BuildPlateauReport({}, {});
  ASSERT_TRUE(r.ok());
  for (SvgMode mode : {SvgMode::kJobs, SvgMode::kGroups}) {
    for (bool log_x : {false, true}) {
      SvgOptions o;
      o.mode = mode;
      o.log_x = log_x;
      absl::StatusOr<std::string> svg = RenderPlateauSvg(*r, o);
      ASSERT_TRUE(svg.ok()) << svg.status();
      ExpectWellFormed(*svg);
      EXPECT_EQ(Count(*svg, "class=\"series\""), 0u);
      EXPECT_THAT(*svg, HasSubstr("no correct candidates to plot"));
    }
  }
  SvgOptions tiny;
  tiny.width = 10;
  EXPECT_EQ(RenderPlateauSvg(*r, tiny).status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<std::string> json_text = ReportToJson(*r);
  ASSERT_TRUE(json_text.ok());
  EXPECT_TRUE(json::parse(*json_text)["jobs"].empty());
  EXPECT_EQ(Lines(JobSummaryCsv(*r)).size(), 1u);
  EXPECT_EQ(Lines(CurveCsv(*r)).size(), 1u);
}

// Search rungs at other settings than the job's are not drawn and not on the
// curve, but every export says how many there were and their best (issue #18
// item 5).
TEST(PlateauExportTest, EvaluationsAtOtherSettingsAreReportedApart) {
  JobTrajectory j = StepJob("job_r", "m", 100, {{50, 2.0}});
  EvalPoint rung{10, 10, true, 10.2};
  rung.comparable = false;
  j.points.push_back(rung);
  absl::StatusOr<PlateauReport> r = BuildPlateauReport({j}, PlateauOptions{});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->jobs.size(), 1u);
  EXPECT_EQ(r->jobs[0].final_best, 2.0) << "a rung's 10.2x made the best";
  EXPECT_EQ(r->jobs[0].first_correct_s, 50.0);
  const auto rows = ParseCsv(JobSummaryCsv(*r));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0][rows[0].size() - 2], "other_settings_evaluations");
  EXPECT_EQ(rows[1][rows[1].size() - 2], "1");
  EXPECT_EQ(rows[1].back(), "10.2");
  auto text = ReportToJson(*r);
  ASSERT_TRUE(text.ok());
  const json parsed = json::parse(*text);
  EXPECT_EQ(parsed["jobs"][0]["other_settings_evaluations"], 1);
  EXPECT_EQ(parsed["jobs"][0]["other_settings_best"], 10.2);
  SvgOptions o;
  o.mode = SvgMode::kJobs;
  auto svg = RenderPlateauSvg(*r, o);
  ASSERT_TRUE(svg.ok());
  EXPECT_THAT(*svg, HasSubstr("1 evaluation at other settings (search rungs) not drawn"));
}

}  // namespace
}  // namespace pkforge::storage

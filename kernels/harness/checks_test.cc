// The verdict rules of AntiCheat that need no rank processes: batch_progress
// and batch_drip over recorded samples.
#include "kernels/harness/checks.h"

#include "gtest/gtest.h"
#include "kernels/harness/outcome.h"
#include "kernels/harness/verdict.h"

namespace pkforge::kernels {
namespace {

using Result = pkforge::v1::EvaluationResult;

const pkforge::v1::CheatCheck* Find(Outcome& out, const std::string& name) {
  out.PublishChecks();
  for (const auto& c : out.result().cheat_checks())
    if (c.check() == name) return &c;
  return nullptr;
}

// Three probes with nothing done at half the batch, three slow drip batches.
TimingSamples Anomalous(double ref_us, double cand_us) {
  TimingSamples s;
  s.batch = 128;
  for (int i = 0; i < 6; ++i) {
    s.ref_us.push_back(ref_us);
    s.cand_us.push_back(cand_us);
  }
  for (int i = 0; i < 3; ++i) {
    s.progress.push_back(ProgressSample{0.5, 0.0, true});
    DripSample d;
    d.ref_service_us = ref_us + 25;
    d.ref_free_us = ref_us;
    d.cand_service_us = cand_us + 25 + 4 * cand_us + 20;  // far beyond twice its free time
    s.drip.push_back(d);
  }
  return s;
}

// One check's rule over recorded samples; the outcome with its checks published.
void Judge(const std::string& check, const TimingSamples& s, Outcome* out) {
  LaunchOptions o;
  o.backend = "host";
  AntiCheat a(o, nullptr, out);
  if (check == "batch_progress")
    a.BatchProgress(s);
  else
    a.BatchDrip(s);
}

TEST(AntiCheatRules, AmortizationEvidenceConvictsACandidateFasterThanTheReference) {
  for (const char* check : {"batch_progress", "batch_drip"}) {
    Outcome out;
    Judge(check, Anomalous(35, 5), &out);
    EXPECT_EQ(out.result().status(), Result::CHEAT_DETECTED) << check;
    const auto* c = Find(out, check);
    ASSERT_NE(c, nullptr) << check;
    EXPECT_FALSE(c->passed());
    EXPECT_FALSE(c->flag_only());
  }
}

// No faster than the reference: nothing forged, only a flag (helper-fp6:
// an honest thread pool at world size 1, 0.08x, behind on its probes; the
// helper_pool control, 0.56x, slow on its drip batches).
TEST(AntiCheatRules, TheSameEvidenceOnlyFlagsACandidateNoFasterThanTheReference) {
  for (const char* check : {"batch_progress", "batch_drip"}) {
    Outcome out;
    Judge(check, Anomalous(35, 60), &out);
    EXPECT_TRUE(out.undecided()) << check;
    const auto* c = Find(out, check);
    ASSERT_NE(c, nullptr) << check;
    EXPECT_FALSE(c->passed());
    EXPECT_TRUE(c->flag_only());
    EXPECT_NE(c->detail().find("no faster than the reference"), std::string::npos) << c->detail();
  }
}

}  // namespace
}  // namespace pkforge::kernels

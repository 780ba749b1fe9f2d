#include "common/metrics.h"

#include <cstdint>
#include <map>
#include <string>

#include "gtest/gtest.h"

namespace pkforge {
namespace {

TEST(MetricsTest, FamilyCallbackRendersEverySeriesItReturns) {
  Metrics m;
  m.Declare("jobs", "gauge", "jobs by state");
  int64_t running = 2;
  m.SetFamilyCallback("jobs", [&] {
    return std::map<std::string, double>{{"state=\"queued\"", 0},
                                         {"state=\"running\"", static_cast<double>(running)}};
  });
  running = 3;  // sampled at render time, not at registration
  const std::string text = m.Render();
  EXPECT_NE(text.find("# TYPE jobs gauge\njobs{state=\"queued\"} 0\njobs{state=\"running\"} 3\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(m.Get("jobs", "state=\"running\""), 3);
  EXPECT_EQ(m.Get("jobs", "state=\"failed\""), 0);
}

// Owners (a job manager, an executor pool) update metrics while holding their
// own locks and take those locks again in their render callbacks; that is
// only deadlock-free if callbacks run without the registry's mutex. Here the
// callbacks update the registry themselves, which would self-deadlock if
// Render or Get held the mutex around them.
TEST(MetricsTest, CallbacksRunWithoutTheRegistryLock) {
  Metrics m;
  m.Declare("renders_total", "counter", "callback invocations");
  m.Declare("one", "gauge", "a series callback");
  m.Declare("many", "gauge", "a family callback");
  m.SetCallback("one", [&] {
    m.Add("renders_total", 1);
    return 1.0;
  });
  m.SetFamilyCallback("many", [&] {
    m.Add("renders_total", 1);
    return std::map<std::string, double>{{"k=\"v\"", 2}};
  });
  const std::string text = m.Render();
  EXPECT_NE(text.find("one 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("many{k=\"v\"} 2\n"), std::string::npos) << text;
  EXPECT_EQ(m.Get("one"), 1);
  EXPECT_EQ(m.Get("many", "k=\"v\""), 2);
  EXPECT_EQ(m.Get("renders_total"), 4);
}

}  // namespace
}  // namespace pkforge

#include "executor/config.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/metrics.h"

namespace pkforge::executor {
namespace {
namespace fs = std::filesystem;

std::string WriteTemp(const std::string& name, const std::string& text) {
  const fs::path p = fs::temp_directory_path() / (name + std::to_string(getpid()));
  std::ofstream(p) << text;
  return p.string();
}

TEST(Config, FileOverridesDefaultsAndRejectsUnknownKeys) {
  ExecutorConfig c;
  ASSERT_TRUE(MergeConfigFile(WriteTemp("cfg", R"({"listen":"127.0.0.1:7000","host_slots":3,
      "extra_include_dirs":["/opt/x"]})"), &c).ok());
  EXPECT_EQ(c.listen, "127.0.0.1:7000");
  EXPECT_EQ(c.host_slots, 3);
  EXPECT_EQ(c.extra_include_dirs, std::vector<std::string>{"/opt/x"});
  auto s = MergeConfigFile(WriteTemp("cfg2", R"({"listne":"x"})"), &c);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("listne"), std::string::npos);
  s = MergeConfigFile(WriteTemp("cfg3", R"({"host_slots":"three"})"), &c);
  EXPECT_NE(s.message().find("host_slots"), std::string::npos);
  EXPECT_FALSE(MergeConfigFile("/nonexistent/cfg.json", &c).ok());
}

TEST(Config, NonLoopbackNeedsAToken) {
  EXPECT_TRUE(IsLoopbackAddress("127.0.0.1:1"));
  EXPECT_TRUE(IsLoopbackAddress("localhost:1"));
  EXPECT_TRUE(IsLoopbackAddress("[::1]:1"));
  EXPECT_FALSE(IsLoopbackAddress("0.0.0.0:1"));
  EXPECT_FALSE(IsLoopbackAddress("[::]:1"));
  EXPECT_FALSE(IsLoopbackAddress("10.1.2.3:50051"));
  ExecutorConfig c;
  c.listen = "0.0.0.0:50051";
  auto s = Finalize(&c, "/proc/self/exe");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("token"), std::string::npos);
}

TEST(Config, GpuListsAreValidated) {
  EXPECT_EQ(*ParseGpuList("0,2,3"), (std::vector<int>{0, 2, 3}));
  // Sorted: device i inside a sandbox is the i-th bound GPU in PCI order.
  EXPECT_EQ(*ParseGpuList("3,1"), (std::vector<int>{1, 3}));
  EXPECT_FALSE(ParseGpuList("0,0").ok());
  EXPECT_FALSE(ParseGpuList("a").ok());
  EXPECT_TRUE(ParseGpuList("all")->empty());
}

TEST(Metrics, RendersPrometheusText) {
  Metrics m;
  m.Declare("x_total", "counter", "things");
  m.Add("x_total", 2, "status=\"OK\"");
  m.Add("x_total", 1, "status=\"OK\"");
  m.Declare("q", "gauge", "queue");
  m.SetCallback("q", [] { return 7.0; });
  m.Declare("lat", "histogram", "latency", {0.1, 1});
  m.Observe("lat", 0.05);
  m.Observe("lat", 0.5);
  m.Observe("lat", 5);
  const std::string text = m.Render();
  EXPECT_NE(text.find("# TYPE x_total counter\nx_total{status=\"OK\"} 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("q 7\n"), std::string::npos) << text;
  EXPECT_NE(text.find("lat_bucket{le=\"0.1\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("lat_bucket{le=\"1\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("lat_bucket{le=\"+Inf\"} 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("lat_count 3\n"), std::string::npos) << text;
}

// The toolkit's bin/ncu is a wrapper script that finds Nsight Compute at run
// time; inside the sandbox only bound paths exist, so the executor must run
// (and bind) the newest install itself. Layout as on the GPU host:
// /usr/local/cuda-13.0/bin/ncu (script), /opt/nvidia/nsight-compute/2025.3.1/ncu.
TEST(Config, NcuWrapperScriptResolvesToTheNewestInstall) {
  const fs::path root = fs::temp_directory_path() / ("ncu_layout_" + std::to_string(getpid()));
  fs::remove_all(root);
  auto exe = [](const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
    fs::permissions(p, fs::perms::owner_all);
  };
  exe(root / "cuda-13.0/bin/ncu", "#!/bin/sh\nexec /opt/nvidia/nsight-compute/x/ncu \"$@\"\n");
  exe(root / "opt/2025.3.1/ncu", "\x7f" "ELF");
  exe(root / "opt/2025.10.0/ncu", "\x7f" "ELF");  // newer: 10 > 3 although "1" < "3"
  fs::create_directories(root / "opt/2026.1.0");   // no ncu inside: ignored
  const std::string opt = (root / "opt").string();
  EXPECT_EQ(ResolveNcu((root / "cuda-13.0/bin/ncu").string(), {opt}),
            fs::canonical(root / "opt/2025.10.0/ncu").string());
  // An install inside the toolkit counts too, compared by version.
  exe(root / "cuda-13.0/nsight-compute-2026.2.0/ncu", "\x7f" "ELF");
  EXPECT_EQ(ResolveNcu((root / "cuda-13.0/bin/ncu").string(), {opt}),
            fs::canonical(root / "cuda-13.0/nsight-compute-2026.2.0/ncu").string());
  // A real binary is kept as it is; so is a script with no install anywhere.
  EXPECT_EQ(ResolveNcu((root / "opt/2025.3.1/ncu").string(), {opt}),
            fs::canonical(root / "opt/2025.3.1/ncu").string());
  fs::remove_all(root / "opt");
  fs::remove_all(root / "cuda-13.0/nsight-compute-2026.2.0");
  EXPECT_EQ(ResolveNcu((root / "cuda-13.0/bin/ncu").string(), {opt}),
            fs::canonical(root / "cuda-13.0/bin/ncu").string());
  fs::remove_all(root);
}

}  // namespace
}  // namespace pkforge::executor

// Unit tests of the sandbox's pure parts: bwrap arguments, the seccomp
// program, cgroup mount parsing, result mapping, ReadFileBeneath.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "sandbox/bwrap_args.h"
#include "sandbox/cgroup.h"
#include "sandbox/sandbox.h"
#include "sandbox/sandbox_test_util.h"
#include "sandbox/seccomp_filter.h"

namespace pkforge::sandbox {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

// Index of the first occurrence of the consecutive `items` in `args`, or -1.
int Find(const std::vector<std::string>& args, std::vector<std::string> items) {
  for (size_t i = 0; i + items.size() <= args.size(); ++i) {
    if (std::equal(items.begin(), items.end(), args.begin() + static_cast<long>(i))) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

BwrapRequest Request(const SandboxConfig& config, const SandboxPolicy& policy) {
  BwrapRequest r;
  r.config = &config;
  r.policy = &policy;
  r.layout.top_level = {{"/lib64", true, "usr/lib64"}, {"/bin", false, ""}};
  r.layout.etc_entries = {"/etc/ld.so.cache"};
  if (policy.gpu) {
    r.gpu_binds = {{"/dev/nvidia0", "/dev/nvidia0"},
                   {"/dev/nvidiactl", "/dev/nvidiactl"},
                   {"/dev/nvidia-uvm", "/dev/nvidia-uvm"}};
  }
  r.layout.proc_read_only = {"/proc/sys", "/proc/sysrq-trigger"};
  r.layout.proc_masks = {"/proc/keys"};
  r.scratch_dir = "/tmp/work/scratch";
  r.cwd = "/tmp/work/scratch";
  return r;
}

// The compile sandbox's policy: the endless device files are /dev/null
// (mounted without device access) after bwrap's own /dev; by default they
// are left alone (NCCL reads /dev/urandom).
TEST(BwrapArgsTest, EndlessDevicesAreMaskedOnlyWhenAsked) {
  SandboxConfig config;
  SandboxPolicy policy;
  auto plain = BuildBwrapArgs(Request(config, policy));
  EXPECT_LT(Find(plain, {"--ro-bind", "/dev/null", "/dev/zero"}), 0);
  policy.mask_endless_devices = true;
  auto args = BuildBwrapArgs(Request(config, policy));
  const int dev = Find(args, {"--dev", "/dev"});
  ASSERT_GE(dev, 0);
  for (const char* d : {"/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"})
    EXPECT_GT(Find(args, {"--ro-bind", "/dev/null", d}), dev) << d;
}

TEST(BwrapArgsTest, IsolatesEverythingByDefault) {
  SandboxConfig config;
  SandboxPolicy policy;
  policy.env = {"PATH=/usr/bin", "A=b=c"};
  auto args = BuildBwrapArgs(Request(config, policy));
  for (const char* flag : {"--unshare-all", "--unshare-user", "--disable-userns",
                           "--die-with-parent", "--new-session", "--clearenv"}) {
    EXPECT_THAT(args, Contains(flag));
  }
  EXPECT_THAT(args, Not(Contains("--share-net")));
  EXPECT_GE(Find(args, {"--cap-drop", "ALL"}), 0);
  EXPECT_GE(Find(args, {"--uid", "1000", "--gid", "1000"}), 0);
  EXPECT_GE(Find(args, {"--setenv", "A", "b=c"}), 0);
  EXPECT_GE(Find(args, {"--ro-bind", "/usr", "/usr"}), 0);
  EXPECT_GE(Find(args, {"--symlink", "usr/lib64", "/lib64"}), 0);
  EXPECT_GE(Find(args, {"--ro-bind", "/bin", "/bin"}), 0);
  EXPECT_GE(Find(args, {"--ro-bind-data", std::to_string(kFdPasswd), "/etc/passwd"}), 0);
  EXPECT_GE(Find(args, {"--seccomp", std::to_string(kFdSeccomp)}), 0);
  EXPECT_GE(Find(args, {"--json-status-fd", std::to_string(kFdStatus)}), 0);
  EXPECT_GE(Find(args, {"--remount-ro", "/"}), 0);
  // Host-wide /proc is read-only, after the sandbox's own procfs is mounted.
  EXPECT_GT(Find(args, {"--ro-bind", "/proc/sys", "/proc/sys"}), Find(args, {"--proc", "/proc"}));
  EXPECT_GE(Find(args, {"--ro-bind", "/proc/sysrq-trigger", "/proc/sysrq-trigger"}), 0);
  EXPECT_GE(Find(args, {"--ro-bind", "/dev/null", "/proc/keys"}), 0);
  // No GPU nodes and no /sys without policy.gpu.
  EXPECT_THAT(args, Not(Contains("/dev/nvidia0")));
  EXPECT_THAT(args, Not(Contains("/sys")));
  // The private /tmp is mounted before the scratch bind below it.
  int tmpfs = Find(args, {"--tmpfs", "/tmp"});
  int scratch = Find(args, {"--bind", "/tmp/work/scratch", "/tmp/work/scratch"});
  ASSERT_GE(tmpfs, 0);
  ASSERT_GE(scratch, 0);
  EXPECT_LT(tmpfs, scratch);
  EXPECT_GE(Find(args, {"--size", std::to_string(policy.tmpfs_mb << 20), "--tmpfs", "/dev/shm"}),
            0);
  // The command is not part of the options (it follows "--" on argv).
  EXPECT_THAT(args, Not(Contains("--")));
}

TEST(BwrapArgsTest, GpuBindsDeviceNodesAndSys) {
  SandboxConfig config;
  SandboxPolicy policy;
  policy.gpu = true;
  auto args = BuildBwrapArgs(Request(config, policy));
  EXPECT_GE(Find(args, {"--dev-bind", "/dev/nvidia0", "/dev/nvidia0"}), 0);
  EXPECT_GE(Find(args, {"--dev-bind", "/dev/nvidia-uvm", "/dev/nvidia-uvm"}), 0);
  EXPECT_GE(Find(args, {"--ro-bind", "/sys", "/sys"}), 0);
  // Device nodes come after the minimal /dev they are bound into.
  EXPECT_LT(Find(args, {"--dev", "/dev"}), Find(args, {"--dev-bind", "/dev/nvidia0"}));
}

// A fake eight-GPU host: /dev with nvidia0..7, the control nodes and
// nvidia-caps/ (regular files stand in for device nodes), and optionally the
// driver's /proc/driver/nvidia/gpus with the given minor per PCI address.
class FakeGpuHost {
 public:
  FakeGpuHost() {
    dev_ = dir_.MakeDir("dev");
    for (int i = 0; i < 8; ++i) testing::WriteFile(dev_ + "/nvidia" + std::to_string(i), "");
    for (const char* n : {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"})
      testing::WriteFile(dev_ + "/" + n, "");
    dir_.MakeDir("dev/nvidia-caps");
    testing::WriteFile(dev_ + "/nvidia-caps/nvidia-cap1", "");
    testing::WriteFile(dev_ + "/other", "");
    driver_ = dir_.Sub("driver-gpus");  // absent until AddDriverGpu
  }
  void AddDriverGpu(const std::string& bus, int minor) {
    dir_.MakeDir("driver-gpus");
    dir_.MakeDir("driver-gpus/" + bus);
    testing::WriteFile(driver_ + "/" + bus + "/information",
                       "Model: \t\t NVIDIA H200\nIRQ:   \t\t 42\nDevice Minor: \t " +
                           std::to_string(minor) + "\nBus Location: \t " + bus + "\n");
  }
  absl::StatusOr<std::vector<DeviceBind>> Binds(std::vector<int> gpus, bool gpu = true) const {
    SandboxPolicy policy;
    policy.gpu = gpu;
    policy.gpus = std::move(gpus);
    return GpuDeviceBinds(policy, dev_, driver_);
  }
  DeviceBind B(const std::string& name) const { return {dev_ + "/" + name, "/dev/" + name}; }

 private:
  testing::TempDir dir_;
  std::string dev_, driver_;
};

TEST(GpuDeviceBindsTest, BindsOnlyTheAssignedGpusAndTheControlNodes) {
  FakeGpuHost host;
  auto binds = host.Binds({5, 2});
  ASSERT_TRUE(binds.ok()) << binds.status();
  EXPECT_EQ(*binds, (std::vector<DeviceBind>{host.B("nvidia2"), host.B("nvidia5"),
                                             host.B("nvidiactl"), host.B("nvidia-uvm"),
                                             host.B("nvidia-uvm-tools"), host.B("nvidia-caps")}));

  // And the bwrap options carry exactly these device binds, no other GPU.
  SandboxConfig config;
  SandboxPolicy policy;
  policy.gpu = true;
  policy.gpus = {2, 5};
  BwrapRequest r = Request(config, policy);
  r.gpu_binds = *binds;
  auto args = BuildBwrapArgs(r);
  std::vector<std::string> bound;
  for (size_t i = 0; i + 2 < args.size(); ++i) {
    if (args[i] == "--dev-bind") bound.push_back(args[i + 1] + " -> " + args[i + 2]);
  }
  std::vector<std::string> expected;
  for (const DeviceBind& b : *binds) expected.push_back(b.host + " -> " + b.inside);
  EXPECT_EQ(bound, expected);
  EXPECT_GE(Find(args, {"--ro-bind", "/sys", "/sys"}), 0);
}

TEST(GpuDeviceBindsTest, MapsIndicesToMinorsInPciOrder) {
  // The driver numbers device nodes in its probe order, which need not be
  // PCI order; CUDA (PCI_BUS_ID) and nvidia-smi index GPUs in PCI order.
  FakeGpuHost host;
  const int minors[8] = {3, 0, 1, 2, 7, 6, 5, 4};
  const char* buses[8] = {"0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0", "0000:5d:00.0",
                          "0000:9a:00.0", "0000:ab:00.0", "0000:ba:00.0", "0000:db:00.0"};
  for (int i = 7; i >= 0; --i) host.AddDriverGpu(buses[i], minors[i]);
  auto binds = host.Binds({2, 5});
  ASSERT_TRUE(binds.ok()) << binds.status();
  ASSERT_GE(binds->size(), 2u);
  EXPECT_EQ((*binds)[0], host.B("nvidia1"));  // index 2 = 0000:3a:00.0, minor 1
  EXPECT_EQ((*binds)[1], host.B("nvidia6"));  // index 5 = 0000:ab:00.0, minor 6
  EXPECT_EQ((*binds)[2], host.B("nvidiactl"));

  auto missing = host.Binds({8});
  EXPECT_TRUE(absl::IsFailedPrecondition(missing.status())) << missing.status();
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("GPU 8 does not exist"));
}

TEST(GpuDeviceBindsTest, AllGpusWhenNoneNamedAndClearErrors) {
  FakeGpuHost host;
  auto all = host.Binds({});
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->size(), 12u);  // nvidia0..7, ctl, uvm, uvm-tools, caps; not "other"
  EXPECT_THAT(*all, Contains(host.B("nvidia7")));
  EXPECT_THAT(*all, Not(Contains(host.B("other"))));

  auto none = host.Binds({}, /*gpu=*/false);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());

  for (const std::vector<int>& bad : {std::vector<int>{-1}, std::vector<int>{1, 1}}) {
    auto r = host.Binds(bad);
    EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
    EXPECT_THAT(std::string(r.status().message()), HasSubstr("gpus:"));
  }
  EXPECT_TRUE(absl::IsInvalidArgument(host.Binds({1}, /*gpu=*/false).status()));
  // No node for index 9 (no driver directory: minor = index).
  auto nine = host.Binds({9});
  EXPECT_TRUE(absl::IsFailedPrecondition(nine.status()));
  EXPECT_THAT(std::string(nine.status().message()), HasSubstr("nvidia9"));
}

TEST(BwrapArgsTest, SyntheticEtcFilesLeakNothing) {
  SandboxConfig config;
  EXPECT_THAT(SandboxPasswd(config), HasSubstr("sandbox:x:1000:1000:"));
  EXPECT_THAT(SandboxHosts(config), HasSubstr("127.0.0.1\tlocalhost"));
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  EXPECT_THAT(SandboxHosts(config), Not(HasSubstr(std::string("\t") + host + "\n")));
}

TEST(HostLayoutTest, ProbesThisHost) {
  HostLayout layout = ProbeHostLayout();
  // Debian 12 and Ubuntu 24.04 have merged /usr: /bin and /lib* are links.
  bool saw_lib = false;
  for (const auto& t : layout.top_level) {
    if (t.path == "/lib" || t.path == "/lib64") saw_lib = true;
  }
  EXPECT_TRUE(saw_lib);
  EXPECT_THAT(layout.etc_entries, Contains("/etc/ld.so.cache"));
  EXPECT_THAT(layout.proc_read_only, Contains("/proc/sys"));
  for (const std::string& p : layout.proc_read_only) {
    EXPECT_EQ(p.find_first_of("0123456789"), std::string::npos) << p;  // no processes
  }
}

TEST(SeccompTest, BuildsAProgramAndListsTheDenials) {
  auto bpf = BuildSeccompFilter({});
  ASSERT_TRUE(bpf.ok()) << bpf.status();
  EXPECT_GT(bpf->size(), 64u);
  EXPECT_EQ(bpf->size() % 8, 0u);
  auto names = DeniedSyscalls({});
  for (const char* n : {"ptrace", "process_vm_readv", "bpf", "keyctl", "mount", "userfaultfd",
                        "kexec_load", "init_module", "open_by_handle_at", "perf_event_open"}) {
    EXPECT_THAT(names, Contains(n));
  }
  EXPECT_THAT(DeniedSyscalls({.allow_perf_events = true}), Not(Contains("perf_event_open")));
  auto perf = BuildSeccompFilter({.allow_perf_events = true});
  ASSERT_TRUE(perf.ok());
  EXPECT_NE(*perf, *bpf);
}

TEST(CgroupTest, ParsesV1AndV2Mounts) {
  const std::string mountinfo =
      "30 24 0:26 / /sys/fs/cgroup rw,nosuid - tmpfs tmpfs rw,mode=755\n"
      "31 30 0:27 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw,nsdelegate\n"
      "32 30 0:28 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n"
      "33 30 0:29 / /sys/fs/cgroup/cpu,cpuacct rw shared:5 - cgroup cgroup rw,cpu,cpuacct\n"
      "34 30 0:30 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,xattr,name=systemd\n"
      "35 24 8:1 / /work rw - ext4 /dev/vda rw\n";
  auto mounts = ParseCgroupMounts(mountinfo);
  ASSERT_EQ(mounts.size(), 4u);
  EXPECT_EQ(mounts[0].version, 2);
  EXPECT_EQ(mounts[0].path, "/sys/fs/cgroup/unified");
  EXPECT_EQ(mounts[1].controllers, std::vector<std::string>{"pids"});
  EXPECT_EQ(mounts[2].controllers, (std::vector<std::string>{"cpu", "cpuacct"}));
  EXPECT_TRUE(mounts[3].controllers.empty());  // name=systemd is not a controller
}

TEST(CgroupTest, CreateNeverFailsAndExplainsItself) {
  CgroupRequest req;
  req.base = "pkforge-test";
  req.name = "unit-" + std::to_string(getpid());
  req.max_tasks = 10;
  auto cg =
      RunCgroup::Create(req, ParseCgroupMounts(testing::ReadFileOrEmpty("/proc/self/mountinfo")));
  ASSERT_NE(cg, nullptr);
  EXPECT_FALSE(cg->description().empty());
  if (cg->has_pids_limit()) {
    EXPECT_TRUE(cg->IsEmpty());
    EXPECT_EQ(cg->ReadStats().pids_limit_hits, 0);
  }
  EXPECT_TRUE(cg->Destroy().ok());
  for (const std::string& dir : cg->dirs()) EXPECT_FALSE(testing::FileExists(dir)) << dir;
}

TEST(ResultTest, ShellExitCodes) {
  SandboxResult r;
  r.exit_code = 7;
  EXPECT_EQ(r.ShellExitCode(), 7);
  r.exit_code = -1;
  r.term_signal = SIGKILL;
  EXPECT_EQ(r.ShellExitCode(), 137);
  r.timed_out = true;
  EXPECT_EQ(r.ShellExitCode(), 124);
  EXPECT_EQ(SandboxModeName(SandboxMode::kUnsafeNoSandbox), "unsafe-no-sandbox");
}

TEST(ReadFileBeneathTest, RefusesEscapes) {
  testing::TempDir dir;
  testing::WriteFile(dir.Sub("ok.txt"), "fine");
  testing::WriteFile(dir.Sub("big.txt"), std::string(4096, 'x'));
  testing::WriteFile("/var/tmp/pkforge-outside-" + std::to_string(getpid()), "secret");
  ASSERT_EQ(symlink("/etc/hostname", dir.Sub("abs-link").c_str()), 0);
  ASSERT_EQ(symlink("ok.txt", dir.Sub("rel-link").c_str()), 0);
  dir.MakeDir("sub");

  auto ok = ReadFileBeneath(dir.path(), "ok.txt", 100);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(*ok, "fine");
  const std::string outside = "../pkforge-outside-" + std::to_string(getpid());
  for (const std::string& bad :
       {std::string("abs-link"), std::string("rel-link"), outside, std::string("/etc/hostname")}) {
    auto r = ReadFileBeneath(dir.path(), bad, 100);
    EXPECT_FALSE(r.ok()) << bad;
  }
  EXPECT_TRUE(absl::IsPermissionDenied(ReadFileBeneath(dir.path(), "abs-link", 100).status()));
  EXPECT_TRUE(absl::IsPermissionDenied(ReadFileBeneath(dir.path(), "sub", 100).status()));
  EXPECT_TRUE(absl::IsResourceExhausted(ReadFileBeneath(dir.path(), "big.txt", 100).status()));
  unlink(("/var/tmp/pkforge-outside-" + std::to_string(getpid())).c_str());
}

TEST(SandboxCreateTest, RejectsBadConfig) {
  SandboxConfig config;
  config.inside_uid = 0;
  EXPECT_FALSE(Sandbox::Create(config).ok());
  config = {};
  config.run_as_uid = 1000;  // without a gid
  EXPECT_FALSE(Sandbox::Create(config).ok());
  config = {};
  config.cgroup_base = "/abs";
  EXPECT_FALSE(Sandbox::Create(config).ok());
}

}  // namespace
}  // namespace pkforge::sandbox

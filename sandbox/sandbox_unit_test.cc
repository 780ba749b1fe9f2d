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
  r.layout.gpu_devices = {"/dev/nvidia0", "/dev/nvidiactl", "/dev/nvidia-uvm"};
  r.layout.proc_read_only = {"/proc/sys", "/proc/sysrq-trigger"};
  r.layout.proc_masks = {"/proc/keys"};
  r.scratch_dir = "/tmp/work/scratch";
  r.cwd = "/tmp/work/scratch";
  return r;
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

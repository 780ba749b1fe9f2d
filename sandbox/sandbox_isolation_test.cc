// Adversarial tests of every sandbox promise (sandbox/README.md maps each
// promise to the tests here). Each test runs sandbox_probe (or a compiler, or
// a shell) inside the sandbox through the library, attempts the attack, and
// fails if the defence does not hold — checked inside (what the probe saw)
// and outside (host side effects, surviving processes).
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "common/ids.h"
#include "sandbox/sandbox.h"
#include "sandbox/sandbox_test_util.h"

namespace pkforge::sandbox {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using namespace ::pkforge::sandbox::testing;  // NOLINT: test helpers

class IsolationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sandbox_ = TestSandbox();
    ASSERT_NE(sandbox_, nullptr);
    scratch_ = dir_.MakeDir("scratch");
    // A secret beside the scratch directory: on the host, never in the view.
    canary_path_ = dir_.Sub("canary.txt");
    canary_ = "CANARY-" + NewId("c");
    WriteFile(canary_path_, canary_ + "\n");
  }

  SandboxResult MustRun(const std::vector<std::string>& argv, const SandboxPolicy& policy) {
    auto r = sandbox_->Run(argv, policy);
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return SandboxResult{};
    return *std::move(r);
  }
  SandboxResult Probe(const std::vector<std::string>& args) { return Probe(args, Policy()); }
  SandboxResult Probe(const std::vector<std::string>& args, const SandboxPolicy& policy) {
    std::vector<std::string> argv = {ProbePath()};
    argv.insert(argv.end(), args.begin(), args.end());
    return MustRun(argv, policy);
  }
  SandboxPolicy Policy() const { return ProbePolicy(scratch_); }

  TempDir dir_;
  std::unique_ptr<Sandbox> sandbox_;
  std::string scratch_, canary_path_, canary_;
};

// ---------------------------------------------------------------- network --

int ListenTcp(in_addr_t addr, int* port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0 || listen(fd, 8) != 0) {
    close(fd);
    return -1;
  }
  socklen_t len = sizeof(sa);
  getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  *port = ntohs(sa.sin_port);
  return fd;
}

TEST_F(IsolationTest, NetworkHostLoopbackListenerUnreachable) {
  int port = 0;
  int listener = ListenTcp(htonl(INADDR_LOOPBACK), &port);
  ASSERT_GE(listener, 0);
  SandboxResult r = Probe({"connect", "127.0.0.1", std::to_string(port)});
  EXPECT_EQ(r.exit_code, 1) << r.stdout_data << r.stderr_data;
  EXPECT_EQ(Value(r.stdout_data, "connect"), "ECONNREFUSED");
  // And nothing arrived on the host side.
  EXPECT_LT(accept4(listener, nullptr, nullptr, SOCK_CLOEXEC), 0);
  EXPECT_EQ(errno, EAGAIN);
  close(listener);
}

TEST_F(IsolationTest, NetworkHostAbstractUnixSocketUnreachable) {
  // Abstract unix sockets belong to the network namespace, not the
  // filesystem: a classic way out of chroot-style sandboxes.
  std::string name = "pkforge-test-" + NewId("s");
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  memcpy(sa.sun_path + 1, name.data(), name.size());
  socklen_t len = static_cast<socklen_t>(sizeof(sa_family_t) + 1 + name.size());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&sa), len), 0);
  ASSERT_EQ(listen(fd, 4), 0);
  SandboxResult r = Probe({"connect-abstract", name});
  EXPECT_EQ(Value(r.stdout_data, "connect_abstract"), "ECONNREFUSED") << r.stdout_data;
  EXPECT_LT(accept4(fd, nullptr, nullptr, 0), 0);
  close(fd);
}

TEST_F(IsolationTest, NetworkOnlyLoopbackInterfaceAndNoRoutes) {
  SandboxResult r = Probe({"ifaces"});
  EXPECT_THAT(Values(r.stdout_data, "iface"), ::testing::ElementsAre("lo 127.0.0.1"));
  // A host address other than loopback (with a real listener on it) and a
  // public address are unreachable.
  struct ifaddrs* list = nullptr;
  std::string external;
  if (getifaddrs(&list) == 0) {
    for (auto* i = list; i != nullptr; i = i->ifa_next) {
      if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
      char text[64];
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, text,
                sizeof(text));
      if (std::string(text) != "127.0.0.1") external = text;
    }
    freeifaddrs(list);
  }
  if (!external.empty()) {
    int port = 0;
    int listener = ListenTcp(htonl(INADDR_ANY), &port);
    ASSERT_GE(listener, 0);
    SandboxResult ext = Probe({"connect", external, std::to_string(port)});
    EXPECT_EQ(ext.exit_code, 1);
    EXPECT_EQ(Value(ext.stdout_data, "connect"), "ENETUNREACH") << external;
    close(listener);
  }
  SandboxResult pub = Probe({"connect", "1.1.1.1", "53"});
  EXPECT_EQ(Value(pub.stdout_data, "connect"), "ENETUNREACH");
}

TEST_F(IsolationTest, SeveralProcessesShareLoopbackIpcAndDevShm) {
  // What the executor's launcher relies on: ranks started inside one sandbox
  // reach each other over loopback, POSIX shm (/dev/shm) and SysV IPC.
  const std::string p = ProbePath();
  std::string script = p + " shm-write /pkf_seg hello-shm && " + p + " shm-read /pkf_seg && " + p +
                       " sysv-write 4242 hello-sysv && " + p + " sysv-read 4242 && { " + p +
                       " serve 40123 & " + p + " talk 40123; wait; }";
  SandboxResult r = MustRun({"/bin/sh", "-c", script}, Policy());
  EXPECT_EQ(r.exit_code, 0) << r.stdout_data << r.stderr_data;
  EXPECT_EQ(Value(r.stdout_data, "shm_content"), "hello-shm");
  EXPECT_EQ(Value(r.stdout_data, "sysv_content"), "hello-sysv");
  EXPECT_EQ(Value(r.stdout_data, "loopback"), "ok");
}

TEST_F(IsolationTest, IpcNamespaceIsPrivateFromHost) {
  const int key = 0x5eed0000 + (getpid() & 0xffff);
  int id = shmget(key, 4096, IPC_CREAT | 0600);
  ASSERT_GE(id, 0);
  SandboxResult r = Probe({"sysv-read", std::to_string(key)});
  shmctl(id, IPC_RMID, nullptr);
  EXPECT_EQ(Value(r.stdout_data, "sysv_read"), "ENOENT") << r.stdout_data;
}

// ------------------------------------------------------------- filesystem --

TEST_F(IsolationTest, FilesystemCanaryUnreadableByOpen) {
  SandboxResult r = Probe({"read", canary_path_});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(Value(r.stdout_data, "read"), "ENOENT");
  EXPECT_THAT(r.stdout_data, Not(HasSubstr(canary_)));
  // Host secrets that are not in the view either.
  for (const char* path : {"/etc/shadow", "/root/.bashrc", "/etc/ssh/sshd_config"}) {
    SandboxResult s = Probe({"read", path});
    EXPECT_EQ(Value(s.stdout_data, "read"), "ENOENT") << path;
  }
}

TEST_F(IsolationTest, FilesystemCanaryUnreadableThroughPlantedSymlink) {
  SandboxResult r = Probe({"symlink", canary_path_, scratch_ + "/link"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(Value(r.stdout_data, "read"), "ENOENT");
  EXPECT_THAT(r.stdout_data, Not(HasSubstr(canary_)));
  // The link now sits in scratch; a trusted host reader must not follow it.
  ASSERT_TRUE(FileExists(scratch_ + "/link"));
  auto host_read = ReadFileBeneath(scratch_, "link", 1 << 20);
  EXPECT_FALSE(host_read.ok());
  EXPECT_TRUE(absl::IsPermissionDenied(host_read.status())) << host_read.status();
}

TEST_F(IsolationTest, FilesystemCanaryUnreadableThroughCompilerInclude) {
  WriteFile(scratch_ + "/evil.cc", "#include \"" + canary_path_ + "\"\nint main() {}\n");
  SandboxPolicy policy = Policy();
  SandboxResult r = MustRun({"g++", "-E", "evil.cc", "-o", "evil.i"}, policy);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.stderr_data, HasSubstr("No such file or directory"));
  EXPECT_THAT(r.stdout_data + r.stderr_data, Not(HasSubstr(canary_)));
  EXPECT_THAT(ReadFileOrEmpty(scratch_ + "/evil.i"), Not(HasSubstr(canary_)));
}

TEST_F(IsolationTest, FilesystemToolchainWorksInside) {
  WriteFile(scratch_ + "/hello.cc",
            "#include <cstdio>\nint main() { std::puts(\"hello from the sandbox\"); }\n");
  SandboxResult r = MustRun({"/bin/sh", "-c", "g++ -O1 -o hello hello.cc && ./hello"}, Policy());
  EXPECT_EQ(r.exit_code, 0) << r.stderr_data;
  EXPECT_EQ(r.stdout_data, "hello from the sandbox\n");
  EXPECT_TRUE(FileExists(scratch_ + "/hello"));
}

TEST_F(IsolationTest, FilesystemWritesOutsideScratchAndRwPathsFail) {
  const std::string ro_dir = dir_.MakeDir("ro");
  const std::string rw_dir = dir_.MakeDir("rw");
  SandboxPolicy policy = Policy();
  policy.ro_paths.push_back(ro_dir);
  policy.rw_paths.push_back(rw_dir);
  struct Case {
    std::string path;
    std::string expect;
  };
  const std::vector<Case> denied = {
      {"/usr/pkforge-pwned", "EROFS"},
      {"/etc/pkforge-pwned", "EROFS"},
      {"/pkforge-pwned", "EROFS"},
      {ro_dir + "/pwned", "EROFS"},
      {ProbeDir() + "/pwned", "EROFS"},
      {"/dev/pwned", "EROFS"},
      // Its parent exists inside only as an empty mount-point directory.
      {dir_.Sub("outside-pwned"), "EROFS"},
  };
  for (const Case& c : denied) {
    SandboxResult r = Probe({"write", c.path}, policy);
    EXPECT_EQ(r.exit_code, 1) << c.path;
    EXPECT_THAT(Value(r.stdout_data, "write"), AnyOf(c.expect, "EACCES", "EPERM")) << c.path;
  }
  EXPECT_FALSE(FileExists("/usr/pkforge-pwned"));
  EXPECT_FALSE(FileExists(ro_dir + "/pwned"));
  EXPECT_FALSE(FileExists(dir_.Sub("outside-pwned")));
  // The writable places are writable, and the writes land on the host.
  for (const std::string& ok : {scratch_ + "/out.txt", rw_dir + "/out.txt"}) {
    SandboxResult r = Probe({"write", ok}, policy);
    EXPECT_EQ(r.exit_code, 0) << ok << r.stdout_data;
    EXPECT_EQ(ReadFileOrEmpty(ok), "pwned\n") << ok;
  }
}

// scratch_read_only (the executor's runs of candidate code): the scratch is
// readable and not writable, and the working directory is the private /tmp,
// a tmpfs, so nothing written lands on the host's disk (red team round 14
// r14_disk_fill: 3 GiB fallocated in a writable scratch, no quota).
TEST_F(IsolationTest, AReadOnlyScratchIsReadableNotWritable) {
  WriteFile(scratch_ + "/artifact.so", "compiled\n");
  SandboxPolicy policy = Policy();
  policy.scratch_read_only = true;
  SandboxResult w = Probe({"write", scratch_ + "/pwned"}, policy);
  EXPECT_EQ(w.exit_code, 1) << w.stdout_data;
  EXPECT_THAT(Value(w.stdout_data, "write"), AnyOf("EROFS", "EACCES", "EPERM"));
  EXPECT_FALSE(FileExists(scratch_ + "/pwned"));
  SandboxResult here = Probe({"write", "relative-pwned"}, policy);  // the working directory
  EXPECT_EQ(here.exit_code, 0) << here.stdout_data;
  EXPECT_FALSE(FileExists(scratch_ + "/relative-pwned"));
  SandboxResult r = Probe({"read", scratch_ + "/artifact.so"}, policy);
  EXPECT_EQ(r.exit_code, 0) << r.stdout_data << r.stderr_data;
}

TEST_F(IsolationTest, FilesystemHostWideProcIsReadOnlyAndMasked) {
  // Opened for writing and closed without writing: harmless even if the
  // defence broke, and the open alone proves whether it holds.
  std::vector<std::string> targets = {"/proc/sys/kernel/core_pattern",
                                      "/proc/sys/kernel/core_uses_pid", "/proc/sys/vm/drop_caches",
                                      "/proc/sys/kernel/hostname"};
  for (const char* optional :
       {"/proc/sysrq-trigger", "/proc/mtrr", "/proc/driver/nvidia/suspend"}) {
    if (FileExists(optional)) targets.push_back(optional);
  }
  for (const std::string& path : targets) {
    SandboxResult r = Probe({"open-write", path});
    EXPECT_EQ(r.exit_code, 1) << path << " is writable inside the sandbox";
    EXPECT_THAT(Value(r.stdout_data, "open_write"), AnyOf("EROFS", "EACCES", "ENOENT")) << path;
  }
  SandboxResult keys = Probe({"read", "/proc/keys"});
  EXPECT_NE(Value(keys.stdout_data, "read"), "ok") << keys.stdout_data;
}

TEST_F(IsolationTest, FilesystemTmpAndDevShmArePrivate) {
  const std::string id = NewId("f");
  const std::string host_tmp = "/tmp/pkf-host-" + id;
  const std::string host_shm = "/dev/shm/pkf-host-" + id;
  WriteFile(host_tmp, canary_);
  WriteFile(host_shm, canary_);
  for (const std::string& p : {host_tmp, host_shm}) {
    SandboxResult r = Probe({"read", p});
    EXPECT_EQ(Value(r.stdout_data, "read"), "ENOENT") << p;
  }
  unlink(host_tmp.c_str());
  unlink(host_shm.c_str());
  const std::string in_tmp = "/tmp/pkf-inside-" + id;
  const std::string in_shm = "/dev/shm/pkf-inside-" + id;
  for (const std::string& p : {in_tmp, in_shm}) {
    SandboxResult r = Probe({"write", p});
    EXPECT_EQ(r.exit_code, 0) << p << r.stdout_data;
    EXPECT_FALSE(FileExists(p)) << p << " leaked to the host";
  }
}

// Descriptors a sandboxed process left in flight in a unix-socket garbage
// cycle (red team round 19 r19_gc_leak_exec: 1.5 GiB of memfds held after
// an evaluation until the next one started) are collected when the sandbox
// ends: the FIFO's reader sees the writer gone.
TEST_F(IsolationTest, ProcessDescriptorsLeftInFlightAreCollectedAtTheEnd) {
  const std::string fifo = scratch_ + "/gc-fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0666), 0) << strerror(errno);
  chmod(fifo.c_str(), 0666);
  const int r = open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(r, 0) << strerror(errno);
  SandboxResult res = Probe({"gc-cycle", fifo});
  EXPECT_EQ(Value(res.stdout_data, "gc-cycle"), "OK") << res.stdout_data << res.stderr_data;
  bool hung_up = false;
  for (int i = 0; i < 200 && !hung_up; ++i) {
    pollfd p{r, POLLIN, 0};
    hung_up = poll(&p, 1, 10) == 1 && (p.revents & POLLHUP) != 0;
  }
  close(r);
  EXPECT_TRUE(hung_up) << "a descriptor the sandboxed process left in a unix-socket cycle "
                          "outlived the sandbox";
}

TEST_F(IsolationTest, FilesystemHostProcessesInvisible) {
  SandboxResult r = Probe({"procfs-dump"});
  EXPECT_EQ(r.exit_code, 0);
  // Only the sandbox's own processes: bwrap's init and the probe.
  std::vector<std::string> pids;
  std::istringstream in(r.stdout_data);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("proc ", 0) == 0 && line.find(" cmdline=") != std::string::npos) {
      pids.push_back(line.substr(5, line.find(' ', 5) - 5));
    }
  }
  EXPECT_LE(pids.size(), 3u) << r.stdout_data;
  EXPECT_THAT(r.stdout_data, Not(HasSubstr("sandbox_isolation_test")));
  EXPECT_THAT(r.stdout_data, Not(HasSubstr("/proc " + std::to_string(getpid()) + " ")));
}

// ------------------------------------------------------------ environment --

TEST_F(IsolationTest, EnvironmentParentSecretsNeverInside) {
  const std::string secret = "sk-" + NewId("k");
  setenv("OPENAI_API_KEY", secret.c_str(), 1);
  setenv("PKFORGE_EXECUTOR_TOKEN", secret.c_str(), 1);
  SandboxResult env = Probe({"env"});
  // Everything any process inside could read: its own environment and every
  // /proc/*/environ and cmdline visible there (bwrap's init included).
  SandboxResult dump = Probe({"procfs-dump"});
  unsetenv("OPENAI_API_KEY");
  unsetenv("PKFORGE_EXECUTOR_TOKEN");
  EXPECT_EQ(env.exit_code, 0);
  EXPECT_THAT(env.stdout_data, Not(HasSubstr(secret)));
  EXPECT_THAT(env.stdout_data, Not(HasSubstr("OPENAI_API_KEY")));
  EXPECT_THAT(dump.stdout_data, Not(HasSubstr(secret)));
  EXPECT_THAT(dump.stdout_data, HasSubstr("environ="));  // the dump did read environs
}

TEST_F(IsolationTest, EnvironmentIsExactlyThePolicy) {
  SandboxPolicy policy = Policy();
  policy.env = {"PATH=/usr/bin:/bin", "ALPHA=1", "BETA=two words", "EMPTY="};
  SandboxResult r = Probe({"env"}, policy);
  // Plus PWD, which bwrap always sets to the working directory.
  EXPECT_THAT(Values(r.stdout_data, "env"),
              ::testing::UnorderedElementsAre("PATH=/usr/bin:/bin", "ALPHA=1", "BETA=two words",
                                              "EMPTY=", "PWD=" + scratch_));
}

// -------------------------------------------------------------- processes --

TEST_F(IsolationTest, ProcessForkBombContainedAndMachineFine) {
  SandboxPolicy policy = Policy();
  policy.max_procs = 32;
  policy.timeout_ms = 3'000;
  // Counting bomb: exact limit.
  SandboxResult counted = Probe({"forkbomb", "100000"}, policy);
  const int forked = atoi(Value(counted.stdout_data, "forked").c_str());
  EXPECT_GT(forked, 0) << counted.stdout_data << counted.stderr_data;
  EXPECT_LE(forked, 32) << counted.enforcement;
  EXPECT_EQ(Value(counted.stdout_data, "fork_error"), "EAGAIN");
  // The real thing: an exponential shell fork bomb, until the deadline.
  const std::string token = NewId("bomb");
  SandboxResult bomb =
      MustRun({"/bin/sh", "-c", "b() { b | b & }; b; sleep 60 # " + token}, policy);
  EXPECT_LT(bomb.wall_ms, 20'000);  // ended by the deadline or by the shell giving up
  EXPECT_THAT(HostProcessesWith(token), IsEmpty());
  // The machine is fine: we can still fork and exec.
  EXPECT_EQ(system("true"), 0);
}

TEST_F(IsolationTest, ProcessDoubleForkSetsidDiesAtDeadline) {
  const std::string token = NewId("tok");
  SandboxPolicy policy = Policy();
  policy.timeout_ms = 2'000;
  auto process = sandbox_->Spawn({ProbePath(), "daemon", token, scratch_, "stay"}, policy);
  ASSERT_TRUE(process.ok()) << process.status();
  // Wait until the setsid'ed grandchild runs, then find it from the host.
  for (int i = 0; i < 1000 && !FileExists(scratch_ + "/ready"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(FileExists(scratch_ + "/ready"));
  std::vector<pid_t> seen = HostProcessesWith(token);
  EXPECT_GE(seen.size(), 2u);  // the original process and the daemon
  auto r = (*process)->Wait();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->timed_out);
  EXPECT_EQ(r->term_signal, SIGKILL);
  for (pid_t pid : seen) EXPECT_FALSE(IsAlive(pid)) << "pid " << pid << " survived";
  EXPECT_THAT(HostProcessesWith(token), IsEmpty());
}

TEST_F(IsolationTest, ProcessDaemonDiesWhenTheCommandExits) {
  const std::string token = NewId("tok");
  SandboxResult r = Probe({"daemon", token, scratch_, "exit"});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_data;
  EXPECT_FALSE(r.timed_out);
  EXPECT_TRUE(FileExists(scratch_ + "/ready"));  // it really did start
  EXPECT_THAT(HostProcessesWith(token), IsEmpty());
}

TEST_F(IsolationTest, ProcessSignalsAndPtraceCannotReachOutside) {
  pid_t victim = fork();
  if (victim == 0) {
    for (;;) pause();
  }
  ASSERT_GT(victim, 0);
  SandboxResult r = Probe({"attack-pid", std::to_string(victim)});
  EXPECT_EQ(Value(r.stdout_data, "kill"), "ESRCH") << r.stdout_data;
  EXPECT_EQ(Value(r.stdout_data, "ptrace_attach"), "EPERM");
  EXPECT_THAT(Value(r.stdout_data, "process_vm_readv"), AnyOf("EPERM", "ESRCH"));
  EXPECT_EQ(Value(r.stdout_data, "ptrace_own_child"), "EPERM");  // seccomp, not just pidns
  int status;
  EXPECT_EQ(waitpid(victim, &status, WNOHANG), 0) << "the host victim was killed";
  kill(victim, SIGKILL);
  waitpid(victim, &status, 0);
}

TEST_F(IsolationTest, ProcessPrivilegesAndSyscallFilter) {
  SandboxResult ids = Probe({"ids"});
  EXPECT_EQ(Value(ids.stdout_data, "uid"), "1000");
  EXPECT_EQ(Value(ids.stdout_data, "no_new_privs"), "1");
  EXPECT_THAT(ids.stdout_data, HasSubstr("CapEff:\t0000000000000000"));
  EXPECT_THAT(ids.stdout_data, HasSubstr("Seccomp:\t2"));
  EXPECT_EQ(Value(ids.stdout_data, "hostname"), "pkforge-sandbox");

  SandboxResult r = Probe({"syscalls"});
  for (const char* key : {"unshare_user", "unshare_net", "mount", "bpf", "keyctl", "userfaultfd",
                          "perf_event_open", "setns", "chroot"}) {
    EXPECT_EQ(Value(r.stdout_data, key), "EPERM") << key << "\n" << r.stdout_data;
  }
  EXPECT_EQ(Value(r.stdout_data, "io_uring_setup"), "ENOSYS");
  EXPECT_EQ(Value(r.stdout_data, "clone3"), "ENOSYS");
  EXPECT_EQ(Value(r.stdout_data, "fork"), "ok");
}

TEST_F(IsolationTest, ProcessKillFromAnotherThread) {
  SandboxPolicy policy = Policy();
  policy.timeout_ms = 60'000;
  auto process = sandbox_->Spawn({ProbePath(), "spin"}, policy);
  ASSERT_TRUE(process.ok()) << process.status();
  std::thread killer([&]() {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    (*process)->Kill();
  });
  auto r = (*process)->Wait();
  killer.join();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->killed);
  EXPECT_FALSE(r->timed_out);
  EXPECT_EQ(r->term_signal, SIGKILL);
  EXPECT_LT(r->wall_ms, 30'000);
}

// -------------------------------------------------------------- resources --

TEST_F(IsolationTest, ResourceWallClockDeadline) {
  SandboxPolicy policy = Policy();
  policy.timeout_ms = 1'000;
  policy.cpu_seconds = 0;
  SandboxResult r = Probe({"spin"}, policy);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.term_signal, SIGKILL);
  EXPECT_EQ(r.ShellExitCode(), 124);
  EXPECT_GE(r.wall_ms, 1'000);
  EXPECT_LT(r.wall_ms, 20'000);
}

TEST_F(IsolationTest, ResourceCpuTimeLimit) {
  SandboxPolicy policy = Policy();
  policy.cpu_seconds = 1;
  SandboxResult r = Probe({"spin"}, policy);
  EXPECT_FALSE(r.timed_out);
  EXPECT_THAT(r.term_signal, AnyOf(SIGXCPU, SIGKILL)) << r.exit_code;
  if (r.cpu_ms >= 0) {
    // Burnt CPU, and was stopped near the limit (tick-granular accounting,
    // so only generous bounds).
    EXPECT_GE(r.cpu_ms, 500);
    EXPECT_LE(r.cpu_ms, 5'000);
  }
}

TEST_F(IsolationTest, ResourceFileSizeLimit) {
  SandboxPolicy policy = Policy();
  policy.max_file_mb = 1;
  SandboxResult r = Probe({"fsize", std::to_string(4 << 20), scratch_ + "/big"}, policy);
  EXPECT_EQ(r.exit_code, 1) << r.stdout_data;
  EXPECT_EQ(Value(r.stdout_data, "fsize_error"), "EFBIG");
  EXPECT_LE(std::filesystem::file_size(scratch_ + "/big"), 1u << 20);
}

// No core dump, to a file or to a pipe core_pattern's helper: RLIMIT_CORE
// is 1 (soft and hard), the value at which the kernel skips even a piped
// dump (0 would let a root helper start outside the sandbox; red team
// round 25).
TEST_F(IsolationTest, ResourceNoCoreDumpEvenToAPipe) {
  rlimit own{};
  ASSERT_EQ(getrlimit(RLIMIT_CORE, &own), 0);
  const std::string want = own.rlim_max < 1 ? "0" : "1";  // a hard 0 cannot be raised
  SandboxResult r = MustRun({"/bin/sh", "-c", "grep 'Max core file size' /proc/self/limits"},
                            Policy());
  std::istringstream line(r.stdout_data);
  std::string max, core, file, size, soft, hard;
  line >> max >> core >> file >> size >> soft >> hard;
  EXPECT_EQ(soft, want) << r.stdout_data;
  EXPECT_EQ(hard, want) << r.stdout_data;
}

TEST_F(IsolationTest, ResourceOpenFilesLimit) {
  SandboxPolicy policy = Policy();
  policy.max_open_files = 64;
  SandboxResult r = Probe({"nofile", "1000"}, policy);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(Value(r.stdout_data, "nofile_error"), "EMFILE");
  EXPECT_LT(atoi(Value(r.stdout_data, "opened").c_str()), 64);
}

TEST_F(IsolationTest, ResourceOutputCappedAndDrained) {
  SandboxPolicy policy = Policy();
  policy.max_output_bytes = 64 * 1024;
  SandboxResult r = Probe({"spew", std::to_string(8 << 20)}, policy);
  // The command was never blocked on a full pipe: it finished.
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.stdout_data.size(), 64u * 1024);
  EXPECT_TRUE(r.stdout_truncated);
  EXPECT_EQ(r.stdout_total_bytes, 8 << 20);
  EXPECT_EQ(r.stderr_data, "done\n");
  EXPECT_FALSE(r.stderr_truncated);
}

TEST_F(IsolationTest, ResourceMemoryHogStopped) {
  SandboxPolicy policy = Policy();
  policy.max_memory_mb = 128;
  policy.tmpfs_mb = 64;
  SandboxResult r = Probe({"memhog", "4096"}, policy);
  EXPECT_FALSE(r.ok()) << r.stdout_data;
  std::vector<std::string> progress = Values(r.stdout_data, "allocated_mb");
  ASSERT_FALSE(progress.empty()) << r.stdout_data << r.stderr_data;
  EXPECT_LT(atoi(progress.back().c_str()), 4096);
  EXPECT_LT(atoi(progress.back().c_str()), 160);
  if (r.peak_rss_kb >= 0) {
    EXPECT_LE(r.peak_rss_kb, 130 * 1024) << r.enforcement;
  }
  if (r.term_signal == SIGKILL) {
    EXPECT_TRUE(r.oom_killed) << r.enforcement;
  }
  // The host is unharmed: we can still allocate and run things.
  std::vector<char> block(64 << 20, 1);
  EXPECT_EQ(block[12345], 1);
  EXPECT_EQ(system("true"), 0);
}

// Concurrent evaluations get disjoint CPUs (executor/cpu_lanes.h): the
// sandbox's processes run only on the policy's, descendants included, with
// or without isolation; a CPU this process may not use is refused before
// anything starts.
TEST_F(IsolationTest, ProcessesRunOnlyOnThePolicysCpus) {
  cpu_set_t own;
  ASSERT_EQ(sched_getaffinity(0, sizeof own, &own), 0);
  int last = -1;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &own)) last = c;
  ASSERT_GE(last, 0);
  for (bool unsafe : {false, true}) {
    SandboxPolicy policy = Policy();
    policy.unsafe_no_sandbox = unsafe;
    policy.cpus = {last};
    SandboxResult r = MustRun(
        {"/bin/sh", "-c", "grep Cpus_allowed_list /proc/self/status; sh -c 'grep Cpus_allowed_list /proc/self/status'"},
        policy);
    const std::string want = "Cpus_allowed_list:\t" + std::to_string(last) + "\n";
    EXPECT_EQ(r.stdout_data, want + want) << "unsafe=" << unsafe << " " << r.stderr_data;
    EXPECT_THAT(r.enforcement, HasSubstr("cpus=affinity(" + std::to_string(last) + ")"));
  }
  SandboxPolicy bad = Policy();
  bad.cpus = {CPU_SETSIZE + 1};
  auto refused = sandbox_->Run({"/bin/true"}, bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("cpus: CPU"));
}

// Compiles run at the lowest priority on the CPUs host evaluations are
// timed on (red team round 18 r18_compile_burn): the command and its
// descendants get the policy's niceness, with or without isolation; a value
// outside 0..19 is refused before anything starts.
TEST_F(IsolationTest, TheCommandRunsAtThePolicysNiceness) {
  for (bool unsafe : {false, true}) {
    SandboxPolicy policy = Policy();
    policy.unsafe_no_sandbox = unsafe;
    policy.nice = 19;
    SandboxResult r = MustRun(
        {"/bin/sh", "-c", "cut -d' ' -f19 /proc/self/stat; sh -c \"cut -d' ' -f19 /proc/self/stat\""},
        policy);
    EXPECT_EQ(r.stdout_data, "19\n19\n") << "unsafe=" << unsafe << " " << r.stderr_data;
    EXPECT_THAT(r.enforcement, HasSubstr("nice=19"));
  }
  SandboxPolicy bad = Policy();
  bad.nice = -5;
  auto refused = sandbox_->Run({"/bin/true"}, bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("nice"));
}

TEST_F(IsolationTest, ResultReportsAccountingAndEnforcement) {
  SandboxResult r = Probe({"exit", "3"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.term_signal, 0);
  EXPECT_EQ(r.mode, SandboxMode::kIsolated);
  EXPECT_THAT(r.enforcement, HasSubstr("isolation=bwrap+seccomp"));
  EXPECT_THAT(r.enforcement, HasSubstr("procs="));
  EXPECT_THAT(r.enforcement, HasSubstr("memory="));
  SandboxResult sig = Probe({"signal", std::to_string(SIGSEGV)});
  EXPECT_EQ(sig.term_signal, SIGSEGV);
  EXPECT_EQ(sig.ShellExitCode(), 128 + SIGSEGV);
}

TEST_F(IsolationTest, ConcurrentRunsFromManyThreadsStayApart) {
  // The executor runs compiles on a thread pool: each sandbox must get its
  // own output, status and deadline, and no descriptor of one may leak into
  // another (a leaked pipe end would keep a finished run waiting).
  constexpr int kThreads = 6;
  std::vector<std::thread> threads;
  std::vector<absl::StatusOr<SandboxResult>> results(kThreads, absl::UnknownError("unset"));
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i]() {
      SandboxPolicy policy = Policy();
      if (i == 0) {
        policy.timeout_ms = 1'000;  // one of them hits its deadline
        results[i] = sandbox_->Run({ProbePath(), "spin"}, policy);
      } else {
        results[i] = sandbox_->Run(
            {"/bin/sh", "-c",
             "echo run-" + std::to_string(i) + "; sleep 0.2; exit " + std::to_string(i)},
            policy);
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_TRUE(results[0].ok()) << results[0].status();
  EXPECT_TRUE(results[0]->timed_out);
  for (int i = 1; i < kThreads; ++i) {
    ASSERT_TRUE(results[i].ok()) << results[i].status();
    EXPECT_EQ(results[i]->exit_code, i);
    EXPECT_EQ(results[i]->stdout_data, "run-" + std::to_string(i) + "\n");
    EXPECT_FALSE(results[i]->timed_out);
    EXPECT_LT(results[i]->wall_ms, 10'000);
  }
}

// ---------------------------------------------------- set-up and failures --

TEST_F(IsolationTest, SetupMissingBwrapIsAnErrorNotAFallback) {
  SandboxConfig config;
  config.bwrap_path = "/nonexistent/bwrap";
  auto sandbox = TestSandbox(config);
  auto r = sandbox->Run({ProbePath(), "exit", "0"}, Policy());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(r.status())) << r.status();
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("bubblewrap"));
  EXPECT_FALSE(sandbox->SelfTest().ok());
}

TEST_F(IsolationTest, SetupBwrapFailureIsReportedWithItsMessage) {
  // A bwrap that fails the way it does when user namespaces are refused.
  const std::string fake = dir_.Sub("fake-bwrap");
  WriteFile(fake,
            "#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n");
  chmod(fake.c_str(), 0755);
  SandboxConfig config;
  config.bwrap_path = fake;
  auto sandbox = TestSandbox(config);
  auto r = sandbox->Run({ProbePath(), "exit", "0"}, Policy());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(r.status())) << r.status();
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("No permissions to creating new"));
}

TEST_F(IsolationTest, SetupCommandNotFound) {
  auto r = sandbox_->Run({"/no/such/program"}, Policy());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsNotFound(r.status())) << r.status();
}

TEST_F(IsolationTest, SetupUnenforceableLimitsAreErrors) {
  if (geteuid() != 0) GTEST_SKIP() << "only root hits the RLIMIT_NPROC exemption";
  SandboxConfig config;
  config.cgroup_mode = CgroupMode::kOff;
  auto sandbox = TestSandbox(config);
  SandboxPolicy policy = Policy();
  policy.max_procs = 10;
  auto r = sandbox->Run({ProbePath(), "exit", "0"}, policy);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(r.status())) << r.status();
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("process limit"));
  policy.max_procs = 0;
  policy.gpu = true;
  policy.max_memory_mb = 100;
  r = sandbox->Run({ProbePath(), "exit", "0"}, policy);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("memory limit"));
}

TEST_F(IsolationTest, SetupRejectsDangerousPolicies) {
  SandboxPolicy policy = Policy();
  policy.rw_paths = {"/"};
  EXPECT_TRUE(absl::IsInvalidArgument(sandbox_->Run({"true"}, policy).status()));
  policy = Policy();
  policy.ro_paths = {"/proc/1"};
  EXPECT_TRUE(absl::IsInvalidArgument(sandbox_->Run({"true"}, policy).status()));
  policy = Policy();
  policy.env = {"NO_EQUALS_SIGN"};
  EXPECT_TRUE(absl::IsInvalidArgument(sandbox_->Run({"true"}, policy).status()));
  policy = Policy();
  policy.scratch_dir = dir_.Sub("missing");
  EXPECT_TRUE(absl::IsInvalidArgument(sandbox_->Run({"true"}, policy).status()));
}

TEST_F(IsolationTest, SetupSelfTestPasses) { EXPECT_TRUE(sandbox_->SelfTest().ok()); }

TEST_F(IsolationTest, RunAsUidEnforcesProcessLimitWithoutCgroups) {
  if (geteuid() != 0) GTEST_SKIP() << "run_as_uid is a root feature";
  SandboxConfig config;
  config.cgroup_mode = CgroupMode::kOff;
  // RLIMIT_NPROC counts every process of the uid: a uid of this test's own,
  // not 65534, whose processes other tests (the red-team battery's candidate
  // ranks) start and end meanwhile (seen: 26 forks under a limit of 24).
  config.run_as_uid = 64917;
  config.run_as_gid = 64917;
  auto sandbox = TestSandbox(config);
  SandboxPolicy policy = Policy();
  policy.max_procs = 24;
  policy.timeout_ms = 10'000;
  auto r = sandbox->Run({ProbePath(), "forkbomb", "100000"}, policy);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->enforcement, HasSubstr("procs=rlimit-nproc"));
  const int forked = atoi(Value(r->stdout_data, "forked").c_str());
  EXPECT_GT(forked, 0) << r->stdout_data << r->stderr_data;
  EXPECT_LE(forked, 24);
  EXPECT_EQ(Value(r->stdout_data, "fork_error"), "EAGAIN");
  // The scratch directory was handed to the unprivileged uid.
  auto w = sandbox->Run({ProbePath(), "write", scratch_ + "/mine"}, policy);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->exit_code, 0) << w->stdout_data;
}

TEST_F(IsolationTest, UnsafeModeSaysSoAndStillScrubsAndLimits) {
  SandboxPolicy policy = Policy();
  policy.unsafe_no_sandbox = true;
  policy.timeout_ms = 1'000;
  setenv("OPENAI_API_KEY", "sk-unsafe-canary", 1);
  SandboxResult env = Probe({"env"}, policy);
  unsetenv("OPENAI_API_KEY");
  EXPECT_EQ(env.mode, SandboxMode::kUnsafeNoSandbox);
  EXPECT_THAT(env.enforcement, Not(HasSubstr("isolation=")));
  EXPECT_THAT(Values(env.stdout_data, "env"), ::testing::ElementsAre("PATH=/usr/bin:/bin"));
  // Honestly unsafe: the canary is readable.
  SandboxResult leak = Probe({"read", canary_path_}, policy);
  EXPECT_EQ(Value(leak.stdout_data, "content"), canary_);
  // The deadline still holds.
  SandboxResult spin = Probe({"spin"}, policy);
  EXPECT_TRUE(spin.timed_out);
}

}  // namespace
}  // namespace pkforge::sandbox

// Executor discovery (issue 19 items 4 and 5): dns:///NAME:PORT targets
// followed as their address list changes (a fake Resolver is the seam; the
// executors are real gRPC servers on distinct loopback addresses sharing one
// port, as pods behind a headless Service do), draining without losing
// evaluations in flight, the executors file (parsing, mtime, a bad file
// keeping the previous list), and SIGHUP to a real pkforge-orchestrator.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <set>
#include <thread>

#include "agent/cancel.h"
#include "orchestrator/discovery.h"
#include "orchestrator/executor_pool.h"
#include "orchestrator/orchestrator.h"
#include "orchestrator/testing/fake_executor.h"
#include "orchestrator/testing/test_util.h"
#include "orchestrator/testing/tls_certs.h"

namespace pkforge::orchestrator {
namespace {

namespace fs = std::filesystem;
using testing::FakeExecutor;
using testing::FakeExecutorOptions;

// ---------------------------------------------------------------- parsing

TEST(ExecutorTargetTest, ParsesStaticAndDnsTargetsAndNamesWhatIsWrong) {
  auto s = ParseExecutorTarget("10.0.0.5:50051");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_FALSE(s->dns);
  auto d = ParseExecutorTarget("dns:///pkforge-executor.ns.svc.cluster.local:50051");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(d->dns);
  EXPECT_EQ(d->host, "pkforge-executor.ns.svc.cluster.local");
  EXPECT_EQ(d->port, "50051");
  auto short_form = ParseExecutorTarget("dns:exec.test:7");
  ASSERT_TRUE(short_form.ok());
  EXPECT_EQ(short_form->host, "exec.test");
  auto v6 = ParseExecutorTarget("dns:///[::1]:9");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");

  for (const std::string bad : {"dns:///exec.test", "dns:///exec.test:", "dns:///:50051",
                                "dns:///exec.test:http", "dns:///exec.test:70000",
                                "dns://8.8.8.8/exec.test:1", "exec.test", ""}) {
    auto r = ParseExecutorTarget(bad);
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << bad;
    EXPECT_NE(r.status().message().find("'" + bad + "'"), std::string::npos) << r.status();
  }
  EXPECT_EQ(JoinHostPort("10.0.0.5", "1"), "10.0.0.5:1");
  EXPECT_EQ(JoinHostPort("fd00::5", "1"), "[fd00::5]:1");
}

TEST(ExecutorsFileTest, OneTargetPerLineWithCommentsAndErrorsNamingTheLine) {
  const std::string dir = testing::MakeTempDir("pkf_exec_file");
  const std::string path = dir + "/executors";
  std::ofstream(path) << "# GPU nodes of job 1234\n"
                         "\n"
                         "  gpu01:50051   # first\n"
                         "dns:///gpus.test:50051\n"
                         "gpu01:50051\n"
                         "\tgpu02:50051\r\n";
  auto t = ReadExecutorsFile(path);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(*t, (std::vector<std::string>{"gpu01:50051", "dns:///gpus.test:50051", "gpu02:50051"}));

  std::ofstream(path) << "gpu01:50051\n# ok\ngpu02 50051\n";
  auto bad = ReadExecutorsFile(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(path + ":3: 'gpu02 50051'"), std::string::npos)
      << bad.status();
  std::ofstream(path) << "gpu01:50051\ndns:///gpus.test\n";
  bad = ReadExecutorsFile(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(path + ":2: executor 'dns:///gpus.test'"),
            std::string::npos)
      << bad.status();
  auto missing = ReadExecutorsFile(dir + "/nope");
  EXPECT_TRUE(absl::IsNotFound(missing.status())) << missing.status();
  EXPECT_NE(missing.status().message().find(dir + "/nope"), std::string::npos);
  fs::remove_all(dir);
}

TEST(ExecutorTargetTest, ConfigKeysAndValidation) {
  const std::string dir = testing::MakeTempDir("pkf_discovery_config");
  const std::string path = dir + "/orchestrator.json";
  std::ofstream(path) << R"({"executors": ["dns:///gpus.test:50051", {"address": "gpu01:1"}],
    "executors_file": "/etc/pkforge/executors", "discovery_interval_s": 2.5,
    "executor_tls_ca_file": "/etc/pkforge/ca.pem"})";
  auto c = LoadConfigFile(path);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->executors_file, "/etc/pkforge/executors");
  EXPECT_EQ(c->discovery_interval_s, 2.5);
  EXPECT_EQ(c->executor_tls_ca_file, "/etc/pkforge/ca.pem");
  EXPECT_TRUE(ValidateConfig(*c).ok()) << ValidateConfig(*c);
  OrchestratorConfig bad = *c;
  bad.executors.push_back(ExecutorEndpoint{.address = "dns:///gpus.test"});
  absl::Status s = ValidateConfig(bad);
  EXPECT_NE(s.message().find("config key 'executors': executor 'dns:///gpus.test'"),
            std::string::npos)
      << s;
  bad = *c;
  bad.discovery_interval_s = 0;
  EXPECT_NE(ValidateConfig(bad).message().find("discovery_interval_s"), std::string::npos);
  fs::remove_all(dir);
}

TEST(SystemResolverTest, ResolvesThroughTheSystemResolver) {
  auto r = SystemResolver();
  auto numeric = r->Resolve("127.0.0.5");
  ASSERT_TRUE(numeric.ok()) << numeric.status();
  EXPECT_EQ(*numeric, std::vector<std::string>{"127.0.0.5"});
  auto local = r->Resolve("localhost");  // /etc/hosts through nsswitch
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_NE(std::find(local->begin(), local->end(), "127.0.0.1"), local->end());
}

// ------------------------------------------------------------ the pool

class FakeResolver final : public Resolver {
 public:
  void Set(const std::string& host, absl::StatusOr<std::vector<std::string>> answer) {
    std::lock_guard lock(mu_);
    answers_.insert_or_assign(host, std::move(answer));
  }
  absl::StatusOr<std::vector<std::string>> Resolve(const std::string& host) override {
    std::lock_guard lock(mu_);
    auto it = answers_.find(host);
    if (it == answers_.end()) return absl::NotFoundError("resolving " + host + ": no such name");
    return it->second;
  }

 private:
  std::mutex mu_;
  std::map<std::string, absl::StatusOr<std::vector<std::string>>> answers_;
};

v1::EvaluateRequest Request(const std::string& source) {
  v1::EvaluateRequest r;
  r.set_problem("allreduce");
  r.set_backend(v1::BACKEND_HOST);
  r.set_world_size(2);
  r.set_dtype(v1::DTYPE_F32);
  r.mutable_size()->set_preset("tiny");
  r.set_source(source);
  return r;
}

std::set<std::string> Addresses(const ExecutorPool& pool) {
  std::set<std::string> out;
  for (const auto& s : pool.List()) out.insert(s.address());
  return out;
}

v1::ExecutorStatus StatusOf(const ExecutorPool& pool, const std::string& address) {
  for (const auto& s : pool.List())
    if (s.address() == address) return s;
  ADD_FAILURE() << "no executor " << address;
  return {};
}

// Polls `done` (an event the code under test produces asynchronously) for
// up to `timeout_s`.
template <typename F>
bool Eventually(F done, double timeout_s = 30) {
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

class DiscoveryTest : public ::testing::Test {
 protected:
  // `n` executors on 127.0.0.2, 127.0.0.3, ... all on one port (as pods
  // behind one headless Service name).
  void StartExecutors(int n) {
    for (int i = 0; i < n; ++i) {
      const std::string ip = "127.0.0." + std::to_string(i + 2);
      FakeExecutorOptions o;
      o.listen = ip + ":" + (port_.empty() ? "0" : port_);
      o.delay_ms = 10;
      o.executor_id = "fake-" + ip;
      auto e = FakeExecutor::Start(o);
      ASSERT_TRUE(e.ok()) << e.status();
      if (port_.empty()) port_ = std::to_string((*e)->port());
      ips_.push_back(ip);
      executors_.push_back(std::move(*e));
    }
  }
  std::string Addr(int i) const { return ips_[i] + ":" + port_; }
  std::string Target() const { return "dns:///executors.test:" + port_; }

  std::unique_ptr<ExecutorPool> MakePool(ExecutorPool::Options o) {
    o.resolver = resolver_;
    auto pool = ExecutorPool::Create(std::move(o));
    EXPECT_TRUE(pool.ok()) << pool.status();
    return pool.ok() ? std::move(*pool) : nullptr;
  }

  std::shared_ptr<FakeResolver> resolver_ = std::make_shared<FakeResolver>();
  std::string port_;
  std::vector<std::string> ips_;
  std::vector<std::unique_ptr<FakeExecutor>> executors_;
};

// Executors behind a name join and leave; those that leave while evaluating
// finish those evaluations (drained), take no new ones, and are then
// removed; a temporary resolver failure keeps them, a vanished name drains all.
TEST_F(DiscoveryTest, DnsExecutorsJoinAndLeaveWithoutLosingEvaluationsInFlight) {
  StartExecutors(3);
  resolver_->Set("executors.test", std::vector<std::string>{ips_[0]});
  ExecutorPool::Options o;
  o.executors = {ExecutorEndpoint{.address = Target()}};
  o.health_interval_s = 3600;  // rounds and refreshes only when the test calls them
  o.discovery_interval_s = 3600;
  auto pool = MakePool(o);
  ASSERT_NE(pool, nullptr);
  pool->CheckNow();
  EXPECT_EQ(Addresses(*pool), (std::set<std::string>{Addr(0)}));
  EXPECT_TRUE(StatusOf(*pool, Addr(0)).healthy()) << StatusOf(*pool, Addr(0)).last_error();

  // Two more pods become ready.
  resolver_->Set("executors.test", std::vector<std::string>{ips_[0], ips_[1], ips_[2]});
  ASSERT_TRUE(pool->Refresh().ok());
  pool->CheckNow();
  ASSERT_EQ(Addresses(*pool), (std::set<std::string>{Addr(0), Addr(1), Addr(2)}));
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(StatusOf(*pool, Addr(i)).healthy()) << Addr(i);

  // Three held evaluations at once: least-loaded dispatch puts one on each.
  agent::CancelToken cancel;
  std::vector<std::promise<void>> started(3);
  std::vector<std::once_flag> once(3);
  std::vector<absl::StatusOr<agent::EvaluationOutcome>> held(3, absl::UnknownError("not run"));
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&, i] {
      held[i] = pool->Evaluate(
          Request("// FAKE_HOLD " + std::to_string(i)),
          [&, i](const v1::EvaluateProgress& m) {
            if (m.has_running()) std::call_once(once[i], [&] { started[i].set_value(); });
          },
          cancel);
      std::call_once(once[i], [&] { started[i].set_value(); });  // never hang on an error
    });
  }
  for (auto& s : started) s.get_future().wait();
  for (int i = 0; i < 3; ++i) ASSERT_EQ(StatusOf(*pool, Addr(i)).in_flight(), 1) << Addr(i);

  // Two of them leave the name while evaluating: drained, still listed with
  // their evaluation in flight, and a new evaluation goes to the third.
  resolver_->Set("executors.test", std::vector<std::string>{ips_[2]});
  ASSERT_TRUE(pool->Refresh().ok());
  for (int i = 0; i < 2; ++i) {
    const v1::ExecutorStatus s = StatusOf(*pool, Addr(i));
    EXPECT_EQ(s.in_flight(), 1) << Addr(i);
    EXPECT_EQ(s.last_error().rfind("draining: " + Target() + " no longer lists it", 0), 0u)
        << s.last_error();
  }
  for (int k = 0; k < 3; ++k) {
    auto fresh = pool->Evaluate(Request("// fresh " + std::to_string(k)), nullptr, cancel);
    ASSERT_TRUE(fresh.ok()) << fresh.status();
    EXPECT_EQ(fresh->executor, Addr(2)) << "a drained executor got a new evaluation";
  }
  EXPECT_EQ(executors_[0]->evaluations_started(), 1);
  EXPECT_EQ(executors_[1]->evaluations_started(), 1);

  // The held evaluations finish, each on the executor it started on.
  for (auto& e : executors_) e->ReleaseHeld();
  for (auto& t : threads) t.join();
  std::set<std::string> ran_on;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(held[i].ok()) << held[i].status();
    EXPECT_EQ(held[i]->result.status(), v1::EvaluationResult::OK);
    ran_on.insert(held[i]->executor);
  }
  EXPECT_EQ(ran_on, (std::set<std::string>{Addr(0), Addr(1), Addr(2)}));
  // Drained and idle: removed.
  EXPECT_EQ(Addresses(*pool), (std::set<std::string>{Addr(2)}));

  // One comes back.
  resolver_->Set("executors.test", std::vector<std::string>{ips_[0], ips_[2]});
  ASSERT_TRUE(pool->Refresh().ok());
  pool->CheckNow();
  EXPECT_EQ(Addresses(*pool), (std::set<std::string>{Addr(0), Addr(2)}));
  EXPECT_TRUE(StatusOf(*pool, Addr(0)).healthy());

  // The resolver does not answer: nothing changes.
  resolver_->Set("executors.test", absl::UnavailableError("resolving executors.test: timeout"));
  absl::Status temporary = pool->Refresh();
  EXPECT_TRUE(absl::IsUnavailable(temporary)) << temporary;
  EXPECT_NE(temporary.message().find("keeping its executors"), std::string::npos) << temporary;
  EXPECT_EQ(Addresses(*pool), (std::set<std::string>{Addr(0), Addr(2)}));
  EXPECT_TRUE(pool->CheckRunnable(testing::SearchSpec()).ok());

  // The name is gone (NXDOMAIN: every pod deleted): all drained and removed.
  resolver_->Set("executors.test", absl::NotFoundError("resolving executors.test: no such name"));
  EXPECT_TRUE(absl::IsNotFound(pool->Refresh()));
  EXPECT_TRUE(Addresses(*pool).empty());
  absl::Status none = pool->CheckRunnable(testing::SearchSpec());
  EXPECT_TRUE(absl::IsUnavailable(none)) << none;
  EXPECT_NE(none.message().find("dns:///NAME:PORT"), std::string::npos) << none;
}

// Without any call from outside, the pool re-resolves every
// discovery_interval_s and follows the name.
TEST_F(DiscoveryTest, PeriodicRediscoveryFollowsTheName) {
  StartExecutors(2);
  resolver_->Set("executors.test", std::vector<std::string>{ips_[0]});
  ExecutorPool::Options o;
  o.executors = {ExecutorEndpoint{.address = Target()}};
  o.health_interval_s = 0.05;
  o.discovery_interval_s = 0.05;
  auto pool = MakePool(o);
  ASSERT_NE(pool, nullptr);
  pool->Start();
  EXPECT_TRUE(Eventually([&] {
    return Addresses(*pool) == std::set<std::string>{Addr(0)} && StatusOf(*pool, Addr(0)).healthy();
  }));
  resolver_->Set("executors.test", std::vector<std::string>{ips_[1]});
  EXPECT_TRUE(Eventually([&] {
    return Addresses(*pool) == std::set<std::string>{Addr(1)} && StatusOf(*pool, Addr(1)).healthy();
  })) << "still " << Addresses(*pool).size() << " executor(s), not only " << Addr(1);
  auto r = pool->Evaluate(Request("// after the move"), nullptr, agent::CancelToken());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->executor, Addr(1));
  pool->Stop();
}

// The executors file: read at start (an unreadable one is an error naming
// it), re-read when its mtime or size changes or when forced (SIGHUP), a
// malformed version keeping the previous list.
TEST_F(DiscoveryTest, ExecutorsFileIsFollowedAndABadVersionKeepsThePreviousList) {
  StartExecutors(2);
  const std::string dir = testing::MakeTempDir("pkf_exec_file_pool");
  const std::string path = dir + "/executors";
  ExecutorPool::Options o;
  o.executors_file = dir + "/missing";
  o.health_interval_s = 3600;
  o.discovery_interval_s = 3600;
  o.resolver = resolver_;
  auto missing = ExecutorPool::Create(o);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find(dir + "/missing"), std::string::npos)
      << missing.status();

  std::ofstream(path) << "# executors of this allocation\n" << Addr(0) << "\n";
  o.executors_file = path;
  auto pool = MakePool(o);
  ASSERT_NE(pool, nullptr);
  pool->CheckNow();
  EXPECT_EQ(Addresses(*pool), (std::set<std::string>{Addr(0)}));

  // Same size, new content, new mtime: picked up by an unforced refresh.
  auto bump = [&] {
    fs::last_write_time(path, fs::last_write_time(path) + std::chrono::seconds(2));
  };
  std::ofstream(path) << "# executors of this allocation\n" << Addr(1) << "\n";
  bump();
  ASSERT_TRUE(pool->Refresh(false).ok());
  pool->CheckNow();
  EXPECT_EQ(Addresses(*pool), (std::set<std::string>{Addr(1)}));
  EXPECT_TRUE(StatusOf(*pool, Addr(1)).healthy());

  // Changed content with the same size and mtime: only a forced read sees it.
  const auto mtime = fs::last_write_time(path);
  std::ofstream(path) << "# executors of this allocation\n" << Addr(0) << "\n";
  fs::last_write_time(path, mtime);
  ASSERT_TRUE(pool->Refresh(false).ok());
  EXPECT_EQ(Addresses(*pool), (std::set<std::string>{Addr(1)}));
  ASSERT_TRUE(pool->Refresh(true).ok());
  EXPECT_EQ(Addresses(*pool), (std::set<std::string>{Addr(0)}));

  // A malformed file (half-written, a typo) changes nothing.
  std::ofstream(path) << Addr(1) << "\nnot-an-address\n";
  bump();
  absl::Status bad = pool->Refresh(true);
  EXPECT_TRUE(absl::IsInvalidArgument(bad)) << bad;
  EXPECT_NE(bad.message().find(path + ":2: "), std::string::npos) << bad;
  EXPECT_NE(bad.message().find("keeping the 1 previous target(s)"), std::string::npos) << bad;
  EXPECT_EQ(Addresses(*pool), (std::set<std::string>{Addr(0)}));
  fs::remove_all(dir);
}

// TLS to executors found through DNS: each is dialled by address but its
// certificate is verified against the resolved name (a certificate for the
// Service name, not for each pod's IP); --executor-tls-ca (config key
// executor_tls_ca_file) turns TLS on for such targets.
TEST_F(DiscoveryTest, TlsToDnsExecutorsVerifiesTheResolvedName) {
  const std::string dir = testing::MakeTempDir("pkf_discovery_tls");
  const testing_tls::TestCerts certs = testing_tls::MakeTestCerts(dir, "DNS:executors.test");
  ASSERT_TRUE(certs.error.empty()) << certs.error;
  FakeExecutorOptions fo;
  fo.listen = "127.0.0.2:0";
  fo.tls_cert = certs.server_cert;
  fo.tls_key = certs.server_key;
  auto ex = FakeExecutor::Start(fo);
  ASSERT_TRUE(ex.ok()) << ex.status();
  const std::string port = std::to_string((*ex)->port());
  const std::string address = "127.0.0.2:" + port;
  resolver_->Set("executors.test", std::vector<std::string>{"127.0.0.2"});

  OrchestratorConfig c;
  c.listen = "127.0.0.1:0";
  c.db = dir + "/traj.db";
  c.executors = {ExecutorEndpoint{.address = "dns:///executors.test:" + port}};
  c.executor_tls_ca_file = certs.ca;
  c.health_interval_s = 3600;
  c.discovery_interval_s = 3600;
  auto orch = Orchestrator::Start(c, resolver_);
  ASSERT_TRUE(orch.ok()) << orch.status();
  (*orch)->executors()->CheckNow();
  v1::ExecutorStatus st = StatusOf(*(*orch)->executors(), address);
  ASSERT_TRUE(st.healthy()) << st.last_error();
  auto r = (*orch)->executors()->Evaluate(Request("// over TLS"), nullptr, agent::CancelToken());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->executor, address);
  (*orch)->Shutdown();

  // The same executor by its address: the certificate does not name it.
  ExecutorPool::Options by_ip;
  by_ip.executors = {ExecutorEndpoint{.address = address, .tls = true, .tls_ca_file = certs.ca}};
  auto pool = MakePool(by_ip);
  ASSERT_NE(pool, nullptr);
  pool->CheckNow();
  EXPECT_FALSE(StatusOf(*pool, address).healthy());
  // And plaintext to it (no --executor-tls-ca) gets nowhere either.
  c.executor_tls_ca_file.clear();
  c.db = dir + "/traj2.db";
  auto plain = Orchestrator::Start(c, resolver_);
  ASSERT_TRUE(plain.ok()) << plain.status();
  (*plain)->executors()->CheckNow();
  EXPECT_FALSE(StatusOf(*(*plain)->executors(), address).healthy());
  (*plain)->Shutdown();
  fs::remove_all(dir);
}

// ------------------------------------------------- SIGHUP, real process

std::set<std::string> ListedHealthy(v1::Orchestrator::Stub* stub, bool healthy_only = true) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  v1::ListExecutorsResponse resp;
  std::set<std::string> out;
  if (!stub->ListExecutors(&ctx, v1::ListExecutorsRequest(), &resp).ok()) return {"<no answer>"};
  for (const auto& e : resp.executors())
    if (e.healthy() || !healthy_only) out.insert(e.address());
  return out;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// pkforge-orchestrator --executors-file, with periodic checks off (a long
// --discovery-interval): only SIGHUP makes it re-read the file, and a bad
// file on SIGHUP is logged while the previous executors stay.
TEST_F(DiscoveryTest, SighupMakesTheOrchestratorProcessReReadTheExecutorsFile) {
  StartExecutors(2);
  const std::string dir = testing::MakeTempDir("pkf_sighup");
  const std::string path = dir + "/executors";
  const std::string log = dir + "/orchestrator.log";
  std::ofstream(path) << Addr(0) << "  # the first node\n";
  auto orch = testing::ChildProcess::Start(
      {PKFORGE_ORCH_BIN, "--listen", "127.0.0.1:0", "--db", dir + "/traj.db", "--executors-file",
       path, "--discovery-interval", "3600", "--health-interval", "0.1"},
      30, log);
  ASSERT_TRUE(orch.ok()) << orch.status();
  auto stub = testing::Client((*orch)->address());
  EXPECT_TRUE(Eventually([&] { return ListedHealthy(stub.get()) == std::set<std::string>{Addr(0)}; }))
      << ReadAll(log);

  std::ofstream(path) << Addr(1) << "\n";
  ASSERT_EQ(kill((*orch)->pid(), SIGHUP), 0);
  EXPECT_TRUE(Eventually([&] {
    return ListedHealthy(stub.get(), false) == std::set<std::string>{Addr(1)} &&
           ListedHealthy(stub.get()) == std::set<std::string>{Addr(1)};
  })) << ReadAll(log);

  std::ofstream(path) << Addr(0) << "\n" << "dns:///missing-port\n";
  ASSERT_EQ(kill((*orch)->pid(), SIGHUP), 0);
  EXPECT_TRUE(Eventually([&] {
    return ReadAll(log).find("SIGHUP: executors file " + path + ":2: ") != std::string::npos;
  })) << ReadAll(log);
  EXPECT_EQ(ListedHealthy(stub.get(), false), std::set<std::string>{Addr(1)});

  (*orch)->Kill(SIGTERM);
  EXPECT_EQ((*orch)->Wait(), 0) << ReadAll(log);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace pkforge::orchestrator

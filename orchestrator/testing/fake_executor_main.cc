// pkforge-fake-executor: the fake Executor of orchestrator/testing as a
// process, so tests can SIGKILL it mid-evaluation. Prints "LISTENING
// 127.0.0.1:<port>" once it serves; stops on SIGTERM/SIGINT.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "orchestrator/testing/fake_executor.h"

int main(int argc, char** argv) {
  pkforge::orchestrator::testing::FakeExecutorOptions o;
  CLI::App app{"pkforge-fake-executor (tests only)"};
  app.add_option("--listen", o.listen);
  app.add_option("--delay-ms", o.delay_ms);
  app.add_option("--usable-gpus", o.usable_gpus);
  app.add_option("--token", o.token);
  app.add_option("--log-file", o.log_file);
  app.add_option("--id", o.executor_id);
  CLI11_PARSE(app, argc, argv);
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  auto f = pkforge::orchestrator::testing::FakeExecutor::Start(o);
  if (!f.ok()) {
    std::fprintf(stderr, "%s\n", f.status().ToString().c_str());
    return 1;
  }
  std::printf("LISTENING %s\n", (*f)->address().c_str());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&signals, &sig);
  return 0;
}

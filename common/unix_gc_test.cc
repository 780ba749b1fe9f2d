#include "common/unix_gc.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "gtest/gtest.h"

namespace pkforge {
namespace {

// Puts both ends of a fresh socket pair and `fd` into the pair's own queue
// and closes the pair: a cycle only the collector can free.
bool MakeGarbageCycle(int fd) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return false;
  const int fds[3] = {sv[0], sv[1], fd};
  alignas(cmsghdr) char buf[CMSG_SPACE(sizeof fds)] = {};
  char x = 'x';
  iovec io{&x, 1};
  msghdr m{};
  m.msg_iov = &io;
  m.msg_iovlen = 1;
  m.msg_control = buf;
  m.msg_controllen = sizeof buf;
  cmsghdr* c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof fds);
  std::memcpy(CMSG_DATA(c), fds, sizeof fds);
  const bool sent = sendmsg(sv[0], &m, 0) == 1;
  close(sv[0]);
  close(sv[1]);
  return sent;
}

// True once the write end of the pipe whose read end is `r` is closed
// everywhere (the reader sees POLLHUP), within `ms`.
bool WriterGoneWithin(int r, int ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < end) {
    pollfd p{r, POLLIN, 0};
    if (poll(&p, 1, 10) == 1 && (p.revents & POLLHUP) != 0) return true;
  }
  return false;
}

// A pipe's write end in a garbage cycle stays open (the reader sees no
// hang-up) until the collector runs; CollectUnixSocketGarbage makes it run.
// Without the call the test fails on the last expectation. Any process on
// the host that releases a unix socket also runs the collector: beside other
// tests (ctest -j2: gRPC servers, sandboxes) that freed the cycle before the
// call in 2 of 3 runs of session 17, so an attempt disturbed that way is
// made again (up to 20, with a shorter quiet window); only when every one
// was disturbed is the test skipped, saying so.
TEST(CollectUnixSocketGarbage, FreesACycleNoProcessHolds) {
  int disturbed = 0;
  for (int attempt = 0; attempt < 20; ++attempt) {
    int p[2];
    ASSERT_EQ(pipe(p), 0);
    ASSERT_TRUE(MakeGarbageCycle(p[1]));
    close(p[1]);
    if (WriterGoneWithin(p[0], attempt == 0 ? 200 : 50)) {
      ++disturbed;  // another process's release collected it first
      close(p[0]);
      continue;
    }
    ASSERT_TRUE(CollectUnixSocketGarbage().ok());
    EXPECT_TRUE(WriterGoneWithin(p[0], 5000))
        << "a descriptor in a unix-socket garbage cycle survived the collection";
    close(p[0]);
    RecordProperty("disturbed_attempts", disturbed);
    return;
  }
  GTEST_SKIP() << "in each of 20 attempts another process released a unix socket and the "
                  "cycle was collected before the call: nothing to show here (rerun alone)";
}

}  // namespace
}  // namespace pkforge

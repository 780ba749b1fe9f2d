#include "common/unix_gc.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "fmt/format.h"

namespace pkforge {

absl::Status CollectUnixSocketGarbage() {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    return absl::InternalError(
        fmt::format("unix-socket garbage collection: socketpair: {}", strerror(errno)));
  // Releasing a unix socket while descriptors are in flight schedules the
  // collector (net/unix/af_unix.c unix_release_sock).
  close(sv[0]);
  close(sv[1]);
  return absl::OkStatus();
}

}  // namespace pkforge

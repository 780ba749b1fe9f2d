// CollectUnixSocketGarbage: makes the kernel collect unix-socket garbage now.
//
// Why: a process can put both ends of a socket pair, and any other
// descriptor (a memfd of gigabytes, a file with a lease on it), into the
// pair's own receive queue with SCM_RIGHTS and close everything. Neither
// socket is then ever released, so nothing schedules the kernel's collector
// for such cycles (it runs when some unix socket is released while
// descriptors are in flight): the memory belongs to no process, survives the
// death of the one that made it, counts for nobody in an OOM kill, and stays
// until some process anywhere on the host happens to close a unix socket
// (red team round 19 r19_gc_leak: 3 GiB held after the evaluation; in a
// 1 GiB memory cgroup the next honest evaluation's judge was OOM-killed).
// Host candidate ranks cannot pass descriptors (sendmsg is refused); cuda
// ranks must (NCCL passes cuMem handles that way), so whoever tears down
// candidate processes calls this afterwards: the judge after its ranks are
// reaped, the sandbox after its processes are gone.
//
// How: one socket pair created and closed. The collection itself runs in a
// kernel worker shortly after (asynchronous since Linux 6.10): freeing a
// cycle's memory may take a few milliseconds after this returns.
//
// Thread safety: safe from any thread; costs two syscalls and two closes.
#pragma once

#include "absl/status/status.h"

namespace pkforge {

// Fails only when no unix socket pair can be made (descriptor limit, a
// seccomp filter): the caller logs it, nothing else depends on it.
absl::Status CollectUnixSocketGarbage();

}  // namespace pkforge

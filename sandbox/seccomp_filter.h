// The syscall filter every sandboxed process runs under (libseccomp).
//
// Contract: BuildSeccompFilter() returns a classic-BPF program (the raw
// `struct sock_filter` array, as seccomp_export_bpf() writes it) in the form
// bubblewrap's `--seccomp FD` reads. The filter allows everything except the
// syscalls listed in DeniedSyscalls(), which fail with EPERM (or ENOSYS where
// callers are expected to fall back, see below). Syscalls of a foreign
// architecture (x86 int 0x80, x32) kill the process: nothing we run needs them
// and they are a classic way around a native-only filter.
//
// Why a denylist and not an allowlist: the sandbox runs compilers (g++, nvcc,
// cicc, ptxas), the CUDA driver and NCCL, whose syscall sets are large and
// change with every toolkit. Namespaces, dropped capabilities and
// no_new_privs already do the heavy lifting; the filter removes the kernel
// interfaces that (a) let one process inspect or modify another (ptrace,
// process_vm_*, pidfd_getfd, kcmp), (b) are frequent privilege-escalation
// vectors reachable without capabilities (new user namespaces, bpf,
// userfaultfd, io_uring, perf_event_open, keyrings), or (c) make no sense in
// a sandbox and need capabilities anyway (mount family, modules, kexec,
// reboot, swap, clock setting), as a second line of defence.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace pkforge::sandbox {

struct SeccompOptions {
  // perf_event_open is allowed only when profiling was requested (Nsight
  // Systems' CPU sampling needs it); it is otherwise a rich kernel attack
  // surface and a side channel.
  bool allow_perf_events = false;
};

// Names of the syscalls denied outright (argument-filtered ones such as
// clone with namespace flags are listed with a suffix, e.g.
// "clone(CLONE_NEW*)"). For documentation and tests.
std::vector<std::string> DeniedSyscalls(const SeccompOptions& options);

// The exported BPF program bytes (a multiple of sizeof(struct sock_filter)).
// INTERNAL when libseccomp refuses a rule (names the rule).
absl::StatusOr<std::string> BuildSeccompFilter(const SeccompOptions& options);

}  // namespace pkforge::sandbox

#include "executor/compiler.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <thread>
#include <tuple>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "absl/time/time.h"
#include "common/files.h"
#include "common/sha256.h"
#include "common/status.h"
#include "executor/compile_flags.h"
#include "executor/toolchain.h"
#include "fmt/format.h"
#include "spdlog/spdlog.h"

// Layout (issue 20): the flag allowlist is in compile_flags.cc, the on-disk
// cache in compile_cache.cc, toolchain probing in toolchain.cc; this file
// builds command lines and keys, runs the sandboxed compiler, and keeps
// identical in-process requests to one compile (single-flight).

namespace pkforge::executor {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Compiler::Produced {
  std::shared_ptr<const CacheEntry> entry;
  bool from_cache = false;  // another process compiled it while we waited for the key lock
  bool cacheable = false;
  double slot_wait_ms = 0;  // waited for one of max_concurrent compiler slots
};

struct Compiler::Flight {
  bool done = false;
  absl::StatusOr<Produced> result = absl::UnknownError("compile in flight");
};

namespace {

constexpr std::string_view kKeyDomain = "pkforge-compile-cache-v1";

// The head of the compiler's output within `budget` bytes: the first errors
// are the ones that explain the rest, so the tail is what gets cut, at a line
// boundary where one is close, with a note saying how much went.
std::pair<std::string, bool> TrimOutput(const std::string& text, int64_t total_bytes, bool capped,
                                        int64_t budget) {
  if (!capped && static_cast<int64_t>(text.size()) <= budget)
    return {SanitizeToolOutput(text), false};
  constexpr int64_t kNoteReserve = 160;
  size_t keep = static_cast<size_t>(std::max<int64_t>(0, budget - kNoteReserve));
  keep = std::min(keep, text.size());
  size_t nl = keep == 0 ? std::string::npos : text.rfind('\n', keep - 1);
  if (nl != std::string::npos && nl + 1 >= keep / 2) keep = nl + 1;
  std::string out = SanitizeToolOutput(std::string_view(text).substr(0, keep));
  if (!out.empty() && out.back() != '\n') out.push_back('\n');
  out += fmt::format(
      "[pkforge: compiler output trimmed: kept the first {} of {} bytes; the first errors above "
      "matter most]\n",
      keep, std::max<int64_t>(total_bytes, static_cast<int64_t>(text.size())));
  return {out, true};
}

void ReplaceAll(std::string* s, std::string_view from, std::string_view to) {
  if (from.empty()) return;
  for (size_t pos = s->find(from); pos != std::string::npos; pos = s->find(from, pos + to.size())) {
    s->replace(pos, from.size(), to);
  }
}

}  // namespace

// ----------------------------------------------------------------- setup ----

Compiler::Compiler(CompilerConfig config, const sandbox::Sandbox* sandbox)
    : config_(std::move(config)),
      sandbox_(sandbox),
      runs_(config_.max_concurrent),
      cache_(config_.cache_dir, config_.cache_max_bytes, config_.max_artifact_bytes) {}

Compiler::~Compiler() = default;

absl::StatusOr<std::unique_ptr<Compiler>> Compiler::Create(CompilerConfig config,
                                                           const sandbox::Sandbox* sandbox) {
  if (sandbox == nullptr) return absl::InvalidArgumentError("sandbox: null");
  if (config.cxx.empty()) return absl::InvalidArgumentError("cxx: empty");
  for (std::string* tool : {&config.cxx, &config.nvcc}) {
    if (!tool->empty() && tool->find('/') != std::string::npos && (*tool)[0] != '/') {
      return absl::InvalidArgumentError(
          fmt::format("'{}': a compiler is a name found on PATH or an absolute path", *tool));
    }
  }
  // nvcc must be an absolute path: the toolkit root (and so its libraries)
  // is found from it, and /usr/local/cuda/bin is not on the sandbox's PATH.
  if (!config.nvcc.empty() && config.nvcc[0] != '/') {
    auto found = FindOnHostPath(config.nvcc);
    if (!found.ok()) return Annotate(found.status(), "nvcc");
    config.nvcc = *found;
  }
  for (auto [field, tool] :
       {std::pair<const char*, const std::string*>{"cxx", &config.cxx}, {"nvcc", &config.nvcc}}) {
    if (!tool->empty() && (*tool)[0] == '/' && access(tool->c_str(), X_OK) != 0) {
      return absl::FailedPreconditionError(
          fmt::format("{}: {} is not an executable file", field, *tool));
    }
  }
  if (config.cache_dir.empty()) return absl::InvalidArgumentError("cache_dir: empty");
  if (config.cache_max_bytes <= 0)
    return absl::InvalidArgumentError("cache_max_bytes: must be > 0");
  if (config.timeout_ms <= 0) return absl::InvalidArgumentError("timeout_ms: must be > 0");
  if (config.max_output_bytes < 512) {
    return absl::InvalidArgumentError("max_output_bytes: must be >= 512");
  }
  if (config.max_source_bytes <= 0 || config.max_artifact_bytes <= 0) {
    return absl::InvalidArgumentError("max_source_bytes / max_artifact_bytes: must be > 0");
  }
  if (!IsCudaArchName(config.cuda_arch)) {
    return absl::InvalidArgumentError(
        fmt::format("cuda_arch: '{}' is not like sm_90", PrintableForMessage(config.cuda_arch)));
  }
  std::unique_ptr<Compiler> compiler(new Compiler(std::move(config), sandbox));
  RETURN_IF_ERROR(compiler->Init());
  return compiler;
}
absl::Status Compiler::Init() {
  if (config_.include_dir.empty() || config_.include_dir[0] != '/') {
    return absl::InvalidArgumentError("include_dir: must be an absolute path");
  }
  const std::string header = config_.include_dir + "/pkforge/candidate.h";
  auto header_text = ReadRegularFile(header, 1 << 20);
  if (!header_text.ok()) {
    return absl::FailedPreconditionError(
        fmt::format("include_dir: {}", AsStd(header_text.status().message())));
  }
  header_digest_ = Sha256Hex(*header_text);
  host_target_ = HostTarget();

  ASSIGN_OR_RETURN(CompileSandboxView view,
                   MakeCompileSandboxView({config_.include_dir, config_.extra_include_dirs,
                                           config_.cxx, config_.nvcc, config_.extra_ro_paths}));
  sandbox_ro_paths_ = std::move(view.ro_paths);
  sandbox_path_env_ = std::move(view.path_env);

  RETURN_IF_ERROR(cache_.Prepare());
  work_dir_ = config_.work_dir.empty() ? config_.cache_dir + "/.work" : config_.work_dir;
  if (mkdir(work_dir_.c_str(), 0711) != 0 && errno != EEXIST) {
    return ErrnoError("mkdir " + work_dir_, errno);
  }
  // The sandbox binds scratch at the same path, possibly as another uid
  // (run_as_uid), which needs search permission on the way there.
  chmod(work_dir_.c_str(), 0711);

  // Scratch directories left by a crashed process (any compile is over after
  // timeout_ms, so older ones are nobody's).
  std::error_code ec;
  const auto stale_before =
      fs::file_time_type::clock::now() - kStaleAge - std::chrono::milliseconds(config_.timeout_ms);
  for (const auto& e : fs::directory_iterator(work_dir_, ec)) {
    std::error_code ec2;
    if (e.is_directory(ec2) && !e.is_symlink(ec2) && e.last_write_time(ec2) < stale_before) {
      fs::remove_all(e.path(), ec2);
    }
  }

  auto cxx_text = ProbeVersion(config_.cxx);
  if (!cxx_text.ok()) return Annotate(cxx_text.status(), "cxx");
  cxx_version_text_ = *cxx_text;
  cxx_version_ = ShortCompilerVersion(cxx_version_text_, false);
  if (!config_.nvcc.empty()) {
    auto nvcc_text = ProbeVersion(config_.nvcc);
    if (!nvcc_text.ok()) return Annotate(nvcc_text.status(), "nvcc");
    nvcc_version_text_ = *nvcc_text;
    nvcc_version_ = ShortCompilerVersion(nvcc_version_text_, true);
    // Candidates may call NCCL and cuBLAS (kernels/README.md).
    cuda_link_args_ = FindCudaLinkArgs(config_.nvcc);
  }
  RETURN_IF_ERROR(cache_.ScanAndEvict(""));
  const Stats s = stats();
  spdlog::info("compiler: {}{}; cache {}: {} entries, {} bytes (bound {})", cxx_version_,
               nvcc_version_.empty() ? ", cuda unavailable (no nvcc)"
                                     : fmt::format(", {} for {}", nvcc_version_, config_.cuda_arch),
               config_.cache_dir, s.entries, s.bytes, config_.cache_max_bytes);
  return absl::OkStatus();
}

absl::StatusOr<std::string> Compiler::MakeScratch() const {
  std::string templ = work_dir_ + "/c-XXXXXX";
  if (mkdtemp(templ.data()) == nullptr) return ErrnoError("mkdtemp " + templ, errno);
  return templ;
}

sandbox::SandboxPolicy Compiler::Policy(const std::string& scratch) const {
  sandbox::SandboxPolicy p;
  p.scratch_dir = scratch;
  p.ro_paths = sandbox_ro_paths_;
  p.rw_paths = config_.extra_rw_paths;
  p.gpu = false;  // nvcc needs no device; a compile never sees one
  p.mask_endless_devices = true;  // `#include "/dev/zero"` fails at once
  p.env = {"PATH=" + sandbox_path_env_, "HOME=/tmp", "TMPDIR=/tmp",
           // Plain ASCII quotes in diagnostics, the same bytes on every host
           // (compile errors are cached).
           "LC_ALL=C", "LANG=C"};
  p.timeout_ms = config_.timeout_ms;
  p.cpu_seconds = config_.timeout_ms / 1000 + 10;  // the deadline is the real bound
  p.max_output_bytes = config_.max_output_bytes;   // only the head is kept anyway
  p.max_memory_mb = config_.max_memory_mb;
  p.max_procs = config_.max_procs;
  p.max_file_mb = std::max<int64_t>(1024, (config_.max_artifact_bytes >> 20) + 1);
  p.unsafe_no_sandbox = config_.unsafe_no_sandbox;
  p.cpus = config_.cpus;
  // Below anything timed on the CPUs compiles share (host evaluations).
  p.nice = 19;
  return p;
}

absl::StatusOr<std::string> Compiler::ProbeVersion(const std::string& compiler) const {
  ASSIGN_OR_RETURN(std::string scratch, MakeScratch());
  return ProbeCompilerVersion(*sandbox_, Policy(scratch), compiler);
}

// ----------------------------------------------------------------- flags ----

std::string Compiler::AllowedFlagsSummary(v1::Backend backend) {
  return AllowedCompileFlagsSummary(backend);
}

absl::Status Compiler::ValidateFlags(v1::Backend backend,
                                     const std::vector<std::string>& flags) const {
  return ValidateCompileFlags(backend, flags, config_.cuda_arch);
}

std::vector<std::string> Compiler::CompilerArgs(const CompileRequest& request) const {
  const bool cuda = request.backend == v1::BACKEND_CUDA;
  bool user_opt = false, user_std = false, user_arch = false;
  std::vector<std::string> user, user_libs;
  for (const auto& f : request.extra_flags) {
    // nvcc refuses a repeated -O/-std/-arch ("redefinition of argument"), and
    // for g++ the user's choice would win anyway: the user's replaces ours.
    user_opt |= IsOptLevelFlag(f);
    user_std |= absl::StartsWith(f, "-std=");
    user_arch |= absl::StartsWith(f, "-arch=");
    (absl::StartsWith(f, "-l") ? user_libs : user).push_back(f);
  }
  std::vector<std::string> args;
  if (!user_std) args.push_back(cuda ? "-std=c++17" : "-std=c++20");
  if (!user_opt) args.push_back("-O3");
  if (cuda) {
    if (!user_arch) args.push_back("-arch=" + config_.cuda_arch);
    // Shared cudart: a static one in the candidate would be a second runtime
    // instance inside the rank process (kernels/README.md).
    args.insert(args.end(), {"-shared", "-Xcompiler=-fPIC", "-cudart=shared"});
  } else {
    // Functions and loops at 64-byte boundaries: a tight loop's speed must
    // not follow where an unrelated edit moved it (an agent's trajectory
    // would read noise as progress; measured 1.2-1.5x on an AMD EPYC). The
    // host references are compiled the same way (kernels/CMakeLists.txt).
    args.insert(args.end(), {"-shared", "-fPIC", "-pthread", "-falign-functions=64", "-falign-loops=64"});
  }
  args.push_back("-I" + config_.include_dir);
  if (cuda) {
    for (const auto& d : config_.extra_include_dirs) args.push_back("-I" + d);
  }
  args.insert(args.end(), user.begin(), user.end());
  args.insert(args.end(), {cuda ? "candidate.cu" : "candidate.cc", "-o", "candidate.so"});
  if (cuda) args.insert(args.end(), cuda_link_args_.begin(), cuda_link_args_.end());
  args.insert(args.end(), user_libs.begin(), user_libs.end());
  return args;
}

std::string Compiler::KeyFor(v1::Backend backend, const std::string& source,
                             const std::vector<std::string>& args) const {
  Sha256 h;
  h.UpdateField(kKeyDomain);
  h.UpdateField(backend == v1::BACKEND_CUDA ? "cuda" : "host");
  h.UpdateField(source);
  h.UpdateField(std::to_string(args.size()));
  for (const auto& a : args) h.UpdateField(a);
  // nvcc compiles host code with the host g++ too, and -march=native depends
  // on the CPU; candidate.h is part of every compile.
  h.UpdateField(cxx_version_text_);
  h.UpdateField(backend == v1::BACKEND_CUDA ? nvcc_version_text_ : std::string());
  h.UpdateField(backend == v1::BACKEND_CUDA ? config_.cuda_arch : std::string());
  h.UpdateField(host_target_);
  h.UpdateField(header_digest_);
  return h.HexDigest();
}

std::string Compiler::CacheKey(const CompileRequest& request) const {
  return KeyFor(request.backend, request.source, CompilerArgs(request));
}

std::string Compiler::CompilerVersion(v1::Backend backend) const {
  return backend == v1::BACKEND_CUDA ? nvcc_version_ : cxx_version_;
}

Compiler::Stats Compiler::stats() const {
  Stats s;
  {
    absl::MutexLock lock(&mu_);
    s = stats_;
  }
  const CompileCache::Stats c = cache_.stats();
  s.evictions = c.evictions;
  s.bytes = c.bytes;
  s.entries = c.entries;
  return s;
}

// --------------------------------------------------------------- compile ----

bool CompileFailureIsEnvironmental(std::string_view output) {
  for (std::string_view cause :
       {"No space left on device", "Disk quota exceeded", "Cannot allocate memory",
        "virtual memory exhausted", "out of memory allocating", "Resource temporarily unavailable",
        "Too many open files", "cannot fork", "fork: ", "vfork: ", "Killed signal terminated program",
        "Input/output error", "Read-only file system", "Stale file handle"})
    if (output.find(cause) != std::string_view::npos) return true;
  return false;
}

absl::StatusOr<Compiler::Produced> Compiler::RunCompiler(const CompileRequest& request,
                                                         const std::string& key,
                                                         const std::vector<std::string>& args,
                                                         const std::atomic<bool>* cancel) {
  const bool cuda = request.backend == v1::BACKEND_CUDA;
  const std::string& compiler = cuda ? config_.nvcc : config_.cxx;
  ASSIGN_OR_RETURN(std::string scratch, MakeScratch());
  // The sandbox is gone by the time this runs.
  const RemoveTreeOnExit cleanup(scratch);
  RETURN_IF_ERROR(
      WriteFileAtomic(scratch, cuda ? "candidate.cu" : "candidate.cc", request.source, 0644));

  std::vector<std::string> argv = {compiler};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto start = Clock::now();
  auto spawned = sandbox_->Spawn(argv, Policy(scratch));
  if (!spawned.ok()) return Annotate(spawned.status(), "compile sandbox");
  std::unique_ptr<sandbox::SandboxProcess> proc = std::move(*spawned);
  std::atomic<bool> finished{false};
  std::thread watcher;
  if (cancel != nullptr) {
    watcher = std::thread([&] {
      while (!finished.load()) {
        if (cancel->load()) {
          proc->Kill();
          return;
        }
        std::this_thread::sleep_for(kPollInterval);
      }
    });
  }
  auto waited = proc->Wait();
  finished.store(true);
  if (watcher.joinable()) watcher.join();
  if (!waited.ok()) return Annotate(waited.status(), "compile sandbox");
  const sandbox::SandboxResult& r = *waited;
  if (r.killed) return CancelledError();
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();

  std::string prefix;
  auto entry = std::make_shared<CacheEntry>();
  entry->compiler = cuda ? nvcc_version_ : cxx_version_;
  entry->flags = args;
  entry->compile_ms = ms;
  Produced produced;
  produced.cacheable = false;
  if (r.timed_out) {
    entry->timed_out = true;
    prefix =
        fmt::format("compile timed out after {:.0f} ms (limit {} ms)\n", ms, config_.timeout_ms);
  } else if (r.oom_killed) {
    // The memory cgroup killed a process of the compile (usually cc1plus or
    // cicc), and the driver then exits normally with an error, so there is no
    // signal of ours to report (issue #15: "killed by signal 0"). Sources that
    // do this: an #include of an endless file (/dev/zero, /dev/urandom),
    // unbounded template or constexpr expansion.
    prefix = fmt::format(
        "the compiler ran out of memory: it reached the compile sandbox's limit of {} MiB and "
        "the kernel killed it (an #include of an endless file such as /dev/zero, or unbounded "
        "template/constexpr expansion, does this)\n",
        config_.max_memory_mb);
  } else if (r.term_signal != 0) {
    prefix = fmt::format("the compiler was killed by signal {} ({})\n", r.term_signal,
                         strsignal(r.term_signal));
  } else if (r.exit_code != 0) {
    // The same source fails the same way - unless the failure blames the
    // machine (a full disk, no memory, no processes), which another client
    // can bring about: red team round 27 filled the data directory's disk
    // with its own cached artifacts, a victim source's link then failed
    // with ENOSPC, and that failure was served from the cache as the
    // source's own compile error after the space came back and after a
    // restart. Reported, never cached.
    produced.cacheable = !CompileFailureIsEnvironmental(r.stderr_data + r.stdout_data);
  } else {
    auto so = sandbox::ReadFileBeneath(scratch, "candidate.so", config_.max_artifact_bytes);
    if (so.ok()) {
      entry->ok = true;
      entry->artifact = std::make_shared<const std::string>(std::move(*so));
      produced.cacheable = true;
    } else {
      prefix = fmt::format("the compiler succeeded but candidate.so could not be taken: {}\n",
                           AsStd(so.status().message()));
    }
  }
  std::string raw = prefix + r.stderr_data;
  if (!r.stdout_data.empty()) {
    if (!raw.empty() && raw.back() != '\n') raw.push_back('\n');
    raw += r.stdout_data;
  }
  // Diagnostics name files relative to scratch; anything absolute that
  // mentions it would make the cached text differ per compile.
  ReplaceAll(&raw, scratch + "/", "");
  ReplaceAll(&raw, scratch, ".");
  const int64_t total =
      static_cast<int64_t>(prefix.size()) + r.stderr_total_bytes + r.stdout_total_bytes;
  std::tie(entry->output, entry->output_truncated) =
      TrimOutput(raw, total, r.stderr_truncated || r.stdout_truncated, config_.max_output_bytes);
  {
    absl::MutexLock lock(&mu_);
    ++stats_.compiles;
    if (!entry->ok) ++stats_.failures;
  }
  spdlog::info("compiler: {} {} in {:.0f} ms: {}{}", cuda ? "cuda" : "host", key.substr(0, 12), ms,
               entry->ok ? "ok" : (entry->timed_out ? "timed out" : "COMPILE_ERROR"),
               r.mode == sandbox::SandboxMode::kUnsafeNoSandbox ? " (UNSAFE: no sandbox)" : "");
  produced.entry = std::move(entry);
  return produced;
}

absl::StatusOr<Compiler::Produced> Compiler::Lead(const CompileRequest& request,
                                                  const std::string& key,
                                                  const std::vector<std::string>& args,
                                                  const std::atomic<bool>* cancel,
                                                  const StartFn& on_start) {
  // Another executor process sharing the cache dir compiles this key at most
  // once too: whoever holds the key's lock compiles, the other then hits.
  FileLock key_lock;
  RETURN_IF_ERROR(cache_.LockKey(key, cancel, &key_lock));
  std::string damage;
  if (auto hit = cache_.Lookup(key, &damage)) {
    cache_.Touch(key);
    on_start(true);
    return Produced{std::move(hit), true, false};
  }
  if (!damage.empty()) {
    // Logged here, under the key's lock, once per damaged entry; the lock-free
    // first look in Compile() just falls through to this one.
    spdlog::warn("compiler: cache entry {} is damaged ({}); recompiling", key, damage);
    cache_.Remove(key);  // we hold the key: nobody is writing it
  }
  {
    absl::MutexLock lock(&mu_);
    ++stats_.misses;
  }
  on_start(false);
  // A compiler slot, only now that the compiler must run (the cache missed
  // under the key's lock); the cancel flag is polled while waiting.
  const auto wait_start = std::chrono::steady_clock::now();
  if (!runs_.Acquire(request.client, cancel)) return CancelledError();
  const double slot_wait_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wait_start)
          .count();
  absl::StatusOr<Produced> ran = RunCompiler(request, key, args, cancel);
  runs_.Release();
  if (!ran.ok()) return ran.status();
  Produced produced = *std::move(ran);
  produced.slot_wait_ms = slot_wait_ms;
  if (produced.cacheable) {
    absl::Status stored = cache_.Store(key, *produced.entry);
    // The caller still gets its library; only later requests pay again.
    if (!stored.ok()) spdlog::warn("compiler: caching {} failed: {}", key, stored.ToString());
  }
  return produced;
}

absl::StatusOr<CompileOutcome> Compiler::Finish(const CacheEntry& entry, const std::string& key,
                                                bool cache_hit, const std::string& dest_dir) const {
  CompileOutcome out;
  out.ok = entry.ok;
  out.timed_out = entry.timed_out;
  out.info.set_cache_hit(cache_hit);
  out.info.set_compile_ms(cache_hit ? 0 : entry.compile_ms);
  out.info.set_compiler(entry.compiler);
  // Clients see the include directories by name, not where this executor is
  // installed (API fuzzing: CompileInfo.flags disclosed the install path).
  std::vector<std::pair<std::string, std::string>> hide = {
      {config_.include_dir, "<pkforge-include>"}};
  for (size_t i = 0; i < config_.extra_include_dirs.size(); ++i)
    hide.emplace_back(config_.extra_include_dirs[i], fmt::format("<extra-include-{}>", i));
  const auto redact = [&](std::string s) {
    for (const auto& [from, to] : hide)
      if (!from.empty()) s = absl::StrReplaceAll(s, {{from, to}});
    return s;
  };
  for (const auto& f : entry.flags) out.info.add_flags(redact(f));
  out.info.set_output(redact(entry.output));
  out.info.set_output_truncated(entry.output_truncated);
  out.info.set_artifact_sha256(key);
  if (entry.ok) {
    // A copy, not a hard link: see the header (candidate code may write to
    // dest_dir; the cache's inode must stay out of its reach).
    RETURN_IF_ERROR(WriteFileAtomic(dest_dir, key + ".so", *entry.artifact, 0755));
    out.artifact_path = dest_dir + "/" + key + ".so";
  }
  return out;
}

absl::StatusOr<CompileOutcome> Compiler::Compile(const CompileRequest& request,
                                                 const std::string& dest_dir,
                                                 const std::atomic<bool>* cancel,
                                                 const StartFn& on_start) {
  RETURN_IF_ERROR(ValidateFlags(request.backend, request.extra_flags));
  if (request.backend == v1::BACKEND_CUDA && !cuda_available()) {
    return absl::FailedPreconditionError("backend cuda: this executor has no nvcc");
  }
  if (request.source.empty()) return absl::InvalidArgumentError("source: empty");
  if (static_cast<int64_t>(request.source.size()) > config_.max_source_bytes) {
    return absl::InvalidArgumentError(fmt::format("source: {} bytes, over the limit of {}",
                                                  request.source.size(), config_.max_source_bytes));
  }
  std::error_code ec;
  fs::create_directories(dest_dir, ec);
  if (ec) return absl::InternalError(fmt::format("dest_dir {}: {}", dest_dir, ec.message()));

  const std::vector<std::string> args = CompilerArgs(request);
  const std::string key = KeyFor(request.backend, request.source, args);
  // Once: a joiner whose leader was cancelled goes round the loop again.
  bool started = false;
  const StartFn start_once = [&](bool cache_hit) {
    if (started) return;
    started = true;
    if (on_start) on_start(cache_hit);
  };
  for (;;) {
    if (IsCancelled(cancel)) return CancelledError();
    std::string damage;
    if (auto hit = cache_.Lookup(key, &damage)) {
      cache_.Touch(key);
      {
        absl::MutexLock lock(&mu_);
        ++stats_.hits;
      }
      start_once(true);
      return Finish(*hit, key, true, dest_dir);
    }
    std::shared_ptr<Flight> flight;
    bool leader = false;
    std::shared_ptr<const CacheEntry> remembered;
    double remembered_s = 0;
    {
      absl::MutexLock lock(&mu_);
      if (auto t = timed_out_.find(key); t != timed_out_.end()) {
        remembered_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t->second.at)
                           .count();
        if (remembered_s < static_cast<double>(config_.timeout_memory_s)) {
          remembered = t->second.entry;
          ++stats_.timeouts_remembered;
        } else {
          timed_out_.erase(t);
        }
      }
    }
    if (remembered != nullptr) {
      start_once(true);
      ASSIGN_OR_RETURN(CompileOutcome out, Finish(*remembered, key, true, dest_dir));
      out.info.set_cache_hit(false);
      out.info.set_output(fmt::format(
          "this source with these flags timed out {:.0f} s ago; it is answered so, without "
          "compiling, until {} s have passed\n{}",
          remembered_s, config_.timeout_memory_s, remembered->output));
      return out;
    }
    {
      absl::MutexLock lock(&mu_);
      auto it = flights_.find(key);
      if (it == flights_.end()) {
        flight = std::make_shared<Flight>();
        flights_.emplace(key, flight);
        leader = true;
      } else {
        flight = it->second;
        // Timed waits: our own cancel flag is polled, not signalled.
        while (!flight->done && !IsCancelled(cancel)) {
          flight_done_.WaitWithTimeout(&mu_, absl::FromChrono(kPollInterval * 4));
        }
        if (!flight->done) return CancelledError();
      }
    }
    if (!leader) {
      const absl::StatusOr<Produced>& r = flight->result;
      // The compiling request was cancelled, not this one: take over.
      if (!r.ok() && absl::IsCancelled(r.status())) continue;
      if (!r.ok()) return r.status();
      {
        absl::MutexLock lock(&mu_);
        ++stats_.joined;
      }
      start_once(true);
      ASSIGN_OR_RETURN(CompileOutcome out, Finish(*r->entry, key, true, dest_dir));
      out.joined = true;
      return out;
    }
    absl::StatusOr<Produced> produced = Lead(request, key, args, cancel, start_once);
    {
      absl::MutexLock lock(&mu_);
      flight->result = produced;
      flight->done = true;
      flights_.erase(key);
      if (produced.ok() && produced->from_cache) ++stats_.hits;
      if (produced.ok() && produced->entry->timed_out && config_.timeout_memory_s > 0) {
        const auto now = std::chrono::steady_clock::now();
        for (auto it = timed_out_.begin(); it != timed_out_.end();)  // the expired go
          it = now - it->second.at > std::chrono::seconds(config_.timeout_memory_s)
                   ? timed_out_.erase(it)
                   : std::next(it);
        timed_out_[key] = TimedOut{now, produced->entry};
      }
    }
    flight_done_.SignalAll();
    if (!produced.ok()) return produced.status();
    ASSIGN_OR_RETURN(CompileOutcome out,
                     Finish(*produced->entry, key, produced->from_cache, dest_dir));
    out.slot_wait_ms = produced->slot_wait_ms;
    return out;
  }
}

}  // namespace pkforge::executor

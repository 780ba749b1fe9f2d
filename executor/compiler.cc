#include "executor/compiler.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string_view>
#include <thread>
#include <tuple>
#include <utility>

#include "common/sha256.h"
#include "common/status.h"
#include "fmt/format.h"
#include "spdlog/spdlog.h"

namespace pkforge::executor {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// --------------------------------------------------------------- entries ----

struct Compiler::Entry {
  bool ok = false;
  bool timed_out = false;
  std::string compiler;
  std::vector<std::string> flags;
  std::string output;
  bool output_truncated = false;
  double compile_ms = 0;
  std::shared_ptr<const std::string> artifact;  // the library, when ok
};

struct Compiler::Produced {
  std::shared_ptr<const Entry> entry;
  bool from_cache = false;  // another process compiled it while we waited for the key lock
  bool cacheable = false;
};

struct Compiler::Flight {
  bool done = false;
  absl::StatusOr<Produced> result = absl::UnknownError("compile in flight");
};

namespace {

constexpr int kMetaFormat = 1;
constexpr std::string_view kKeyDomain = "pkforge-compile-cache-v1";
constexpr int64_t kMaxMetaBytes = 16 << 20;
constexpr int64_t kProbeTimeoutMs = 60'000;
// Temporary files and orphaned libraries younger than this may belong to a
// writer in another process that is still working.
constexpr auto kStaleAge = std::chrono::minutes(10);
constexpr int kMaxFlags = 64;
constexpr size_t kMaxFlagLength = 256;
constexpr auto kPollInterval = std::chrono::milliseconds(5);

bool IsCancelled(const std::atomic<bool>* cancel) {
  return cancel != nullptr && cancel->load(std::memory_order_relaxed);
}

absl::Status CancelledError() { return absl::CancelledError("compile cancelled"); }

class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  ~UniqueFd() { Reset(); }
  UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) {
      Reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void Reset() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

bool IsHexKey(std::string_view s) {
  if (s.size() != 64) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// Reads a whole regular file without following a symlink in its last
// component (cache files are ours, but the cache directory may be shared).
absl::StatusOr<std::string> ReadRegularFile(const std::string& path, int64_t max_bytes,
                                            int64_t expect_size = -1) {
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd.valid()) return ErrnoError(fmt::format("open {}", path), errno);
  struct stat st;
  if (fstat(fd.get(), &st) != 0) return ErrnoError(fmt::format("fstat {}", path), errno);
  if (!S_ISREG(st.st_mode)) return absl::DataLossError(path + " is not a regular file");
  if (st.st_size > max_bytes) return absl::DataLossError(path + " is too large");
  if (expect_size >= 0 && st.st_size != expect_size) {
    return absl::DataLossError(
        fmt::format("{} is {} bytes, expected {}", path, st.st_size, expect_size));
  }
  std::string data(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < data.size()) {
    ssize_t n = read(fd.get(), data.data() + got, data.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError(fmt::format("read {}", path), errno);
    if (n == 0) return absl::DataLossError(path + " shrank while being read");
    got += static_cast<size_t>(n);
  }
  return data;
}

std::string UniqueSuffix() {
  static std::atomic<uint64_t> counter{0};
  return fmt::format("{}-{}-{:x}", getpid(), counter.fetch_add(1),
                     static_cast<uint64_t>(Clock::now().time_since_epoch().count()) & 0xffffff);
}

// Writes `data` to dir/name atomically: readers see the old file or the
// complete new one, never a prefix. Not fsync'ed: after a power loss an entry
// may be short, which the size+sha256 check on every hit catches.
absl::Status WriteFileAtomic(const std::string& dir, const std::string& name, std::string_view data,
                             mode_t mode) {
  const std::string tmp = fmt::format("{}/.tmp-{}-{}", dir, name, UniqueSuffix());
  const std::string final_path = dir + "/" + name;
  {
    UniqueFd fd(open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd.valid()) return ErrnoError(fmt::format("create {}", tmp), errno);
    size_t done = 0;
    while (done < data.size()) {
      ssize_t n = write(fd.get(), data.data() + done, data.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        int err = errno;
        unlink(tmp.c_str());
        return ErrnoError(fmt::format("write {}", tmp), err);
      }
      done += static_cast<size_t>(n);
    }
    // fchmod: the umask must not decide whether the sandboxed worker can read it.
    if (fchmod(fd.get(), mode) != 0) {
      int err = errno;
      unlink(tmp.c_str());
      return ErrnoError(fmt::format("chmod {}", tmp), err);
    }
  }
  if (rename(tmp.c_str(), final_path.c_str()) != 0) {
    int err = errno;
    unlink(tmp.c_str());
    return ErrnoError(fmt::format("rename to {}", final_path), err);
  }
  return absl::OkStatus();
}

// An exclusive flock on `path` that other threads and processes respect.
// With remove_on_release the file is unlinked while still locked; an acquirer
// that locked an already-unlinked file notices (inode differs) and retries, the
// standard protocol that keeps per-key lock files from accumulating.
class FileLock {
 public:
  FileLock() = default;
  ~FileLock() {
    if (fd_.valid() && remove_on_release_) unlink(path_.c_str());
  }
  absl::Status Acquire(const std::string& path, bool remove_on_release,
                       const std::atomic<bool>* cancel) {
    for (;;) {
      if (IsCancelled(cancel)) return CancelledError();
      UniqueFd fd(open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
      if (!fd.valid()) return ErrnoError(fmt::format("open lock {}", path), errno);
      if (cancel == nullptr) {
        while (flock(fd.get(), LOCK_EX) != 0) {
          if (errno != EINTR) return ErrnoError(fmt::format("flock {}", path), errno);
        }
      } else {
        // Polled so that a cancelled request stops waiting for another
        // process's compile.
        while (flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
          if (errno != EWOULDBLOCK && errno != EINTR) {
            return ErrnoError(fmt::format("flock {}", path), errno);
          }
          if (IsCancelled(cancel)) return CancelledError();
          std::this_thread::sleep_for(kPollInterval * 2);
        }
      }
      struct stat held, now;
      if (fstat(fd.get(), &held) == 0 && stat(path.c_str(), &now) == 0 &&
          held.st_ino == now.st_ino && held.st_dev == now.st_dev) {
        fd_ = std::move(fd);
        path_ = path;
        remove_on_release_ = remove_on_release;
        return absl::OkStatus();
      }
    }
  }

 private:
  UniqueFd fd_;
  std::string path_;
  bool remove_on_release_ = false;
};

// Replaces bytes that are not valid UTF-8 (and control characters other than
// newline and tab) by '?': CompileInfo.output is a proto3 string, which must
// be valid UTF-8, and diagnostics may quote arbitrary bytes of the source.
std::string SanitizeText(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  size_t i = 0;
  while (i < in.size()) {
    const auto c = static_cast<unsigned char>(in[i]);
    if (c < 0x80) {
      out.push_back((c >= 0x20 && c != 0x7f) || c == '\n' || c == '\t' ? static_cast<char>(c)
                                                                       : '?');
      ++i;
      continue;
    }
    size_t len = 0;
    uint32_t cp = 0;
    if ((c & 0xe0) == 0xc0) {
      len = 2;
      cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      len = 3;
      cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      len = 4;
      cp = c & 0x07;
    }
    bool valid = len != 0 && i + len <= in.size();
    for (size_t k = 1; valid && k < len; ++k) {
      const auto cc = static_cast<unsigned char>(in[i + k]);
      valid = (cc & 0xc0) == 0x80;
      cp = (cp << 6) | (cc & 0x3f);
    }
    if (valid) {
      static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
      valid = cp >= kMin[len] && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff);
    }
    if (valid) {
      out.append(in.substr(i, len));
      i += len;
    } else {
      out.push_back('?');
      ++i;
    }
  }
  return out;
}

// The head of the compiler's output within `budget` bytes: the first errors
// are the ones that explain the rest, so the tail is what gets cut, at a line
// boundary where one is close, with a note saying how much went.
std::pair<std::string, bool> TrimOutput(const std::string& text, int64_t total_bytes, bool capped,
                                        int64_t budget) {
  if (!capped && static_cast<int64_t>(text.size()) <= budget) return {SanitizeText(text), false};
  constexpr int64_t kNoteReserve = 160;
  size_t keep = static_cast<size_t>(std::max<int64_t>(0, budget - kNoteReserve));
  keep = std::min(keep, text.size());
  size_t nl = keep == 0 ? std::string::npos : text.rfind('\n', keep - 1);
  if (nl != std::string::npos && nl + 1 >= keep / 2) keep = nl + 1;
  std::string out = SanitizeText(std::string_view(text).substr(0, keep));
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

// "g++ (Debian 12.2.0-14+deb12u1) 12.2.0" -> "g++ 12.2.0";
// nvcc's "... release 13.0, V13.0.88" -> "nvcc 13.0.88".
std::string ShortVersion(const std::string& text, bool nvcc) {
  if (nvcc) {
    size_t pos = text.find(", V");
    if (pos != std::string::npos) {
      size_t end = text.find_first_of(" \n", pos + 3);
      return "nvcc " + text.substr(pos + 3, end == std::string::npos ? end : end - pos - 3);
    }
  }
  std::string line = text.substr(0, text.find('\n'));
  size_t clang = line.find("clang version ");
  if (clang != std::string::npos) {
    std::istringstream rest(line.substr(clang + 14));
    std::string v;
    rest >> v;
    return "clang " + v;
  }
  std::istringstream words(line);
  std::vector<std::string> tokens;
  for (std::string w; words >> w;) tokens.push_back(w);
  if (tokens.size() >= 2) return tokens.front() + " " + tokens.back();
  return line;
}

bool InToolchainView(const std::string& path) {
  // What every sandbox sees read-only anyway (sandbox.h: /usr, /bin, /sbin, /lib*).
  for (const char* root : {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}) {
    std::string_view r(root);
    if (path == r ||
        (path.size() > r.size() && path.compare(0, r.size(), r) == 0 && path[r.size()] == '/')) {
      return true;
    }
  }
  return false;
}

absl::StatusOr<std::string> FindOnHostPath(const std::string& name) {
  const char* path = getenv("PATH");
  std::istringstream dirs(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (dir.empty() || dir[0] != '/') continue;
    std::string candidate = dir + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return absl::NotFoundError(fmt::format("'{}' not found on PATH", name));
}

std::string HostTarget() {
  struct utsname u;
  std::string target = uname(&u) == 0 ? u.machine : "unknown";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      target += " " + line.substr(line.find(':') == std::string::npos ? 0 : line.find(':') + 1);
      break;
    }
  }
  return target;
}

std::string Printable(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 120)) {
    const auto u = static_cast<unsigned char>(c);
    out += (u >= 0x20 && u < 0x7f) ? std::string(1, c) : fmt::format("\\x{:02x}", u);
  }
  if (s.size() > 120) out += "...";
  return out;
}

// ------------------------------------------------------------- allowlist ----

bool ParseBoundedInt(std::string_view s, int lo, int hi) {
  if (s.empty() || s.size() > 6) return false;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  return v >= lo && v <= hi;
}

bool IsIdentifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

bool IsLowerWord(std::string_view s, std::string_view extra = "-") {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || extra.find(c) != extra.npos;
  });
}

// -DNAME, -DNAME=VALUE (printable ASCII), -UNAME. No shell is involved, so
// the value cannot inject options; it can only change the candidate itself.
bool IsMacroFlag(std::string_view f) {
  if (f.size() < 3 || f[0] != '-' || (f[1] != 'D' && f[1] != 'U')) return false;
  std::string_view body = f.substr(2);
  size_t eq = body.find('=');
  if (f[1] == 'U' || eq == std::string_view::npos) return IsIdentifier(body);
  if (!IsIdentifier(body.substr(0, eq))) return false;
  return std::all_of(body.begin() + static_cast<std::ptrdiff_t>(eq) + 1, body.end(),
                     [](char c) { return c >= 0x20 && c < 0x7f; });
}

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

bool HostFlagAllowed(std::string_view f, bool inside_xcompiler) {
  static const std::set<std::string_view> kExact = {
      "-O0", "-O1", "-O2", "-O3", "-Os",      "-Ofast",   "-g",           "-g0",
      "-g1", "-g2", "-g3", "-w",  "-pthread", "-fopenmp", "-fopenmp-simd"};
  static const std::set<std::string_view> kLibs = {"-lm", "-lrt", "-latomic", "-lpthread"};
  static const std::set<std::string_view> kStd = {"c++17",   "c++20",   "c++23",
                                                  "gnu++17", "gnu++20", "gnu++23"};
  static const std::set<std::string_view> kF = {"fast-math",
                                                "math-errno",
                                                "unsafe-math-optimizations",
                                                "trapping-math",
                                                "finite-math-only",
                                                "associative-math",
                                                "reciprocal-math",
                                                "signed-zeros",
                                                "unroll-loops",
                                                "unroll-all-loops",
                                                "peel-loops",
                                                "tree-vectorize",
                                                "tree-loop-vectorize",
                                                "tree-slp-vectorize",
                                                "omit-frame-pointer",
                                                "strict-aliasing",
                                                "exceptions",
                                                "rtti",
                                                "prefetch-loop-arrays",
                                                "ipa-pta",
                                                "semantic-interposition",
                                                "inline-functions",
                                                "split-loops",
                                                "gcse-after-reload",
                                                "aggressive-loop-optimizations",
                                                "builtin",
                                                "rename-registers",
                                                "sched-pressure"};
  static const std::set<std::string_view> kM = {
      "avx",        "avx2",       "fma",         "f16c",         "bmi",
      "bmi2",       "sse2",       "sse3",        "ssse3",        "sse4",
      "sse4.1",     "sse4.2",     "popcnt",      "lzcnt",        "movbe",
      "prfchw",     "vpclmulqdq", "pclmul",      "aes",          "sha",
      "gfni",       "avxvnni",    "avx512f",     "avx512bw",     "avx512cd",
      "avx512dq",   "avx512vl",   "avx512vnni",  "avx512bf16",   "avx512fp16",
      "avx512ifma", "avx512vbmi", "avx512vbmi2", "avx512bitalg", "avx512vpopcntdq",
      "amx-tile",   "amx-int8",   "amx-bf16",    "amx-fp16"};
  if (kExact.count(f) || IsMacroFlag(f)) return true;
  if (!inside_xcompiler && kLibs.count(f)) return true;
  if (StartsWith(f, "-std=")) return !inside_xcompiler && kStd.count(f.substr(5));
  if (StartsWith(f, "-march=") || StartsWith(f, "-mtune=")) return IsLowerWord(f.substr(7), "-.");
  if (StartsWith(f, "-mprefer-vector-width=")) {
    std::string_view w = f.substr(22);
    return w == "128" || w == "256" || w == "512" || w == "none";
  }
  if (StartsWith(f, "-m")) {
    std::string_view m = f.substr(2);
    if (StartsWith(m, "no-")) m = m.substr(3);
    return kM.count(m) > 0;
  }
  if (StartsWith(f, "-f")) {
    std::string_view o = f.substr(2);
    if (StartsWith(o, "no-")) o = o.substr(3);
    if (kF.count(o)) return true;
    if (StartsWith(o, "fp-contract=")) {
      std::string_view v = o.substr(12);
      return v == "fast" || v == "on" || v == "off";
    }
    if (StartsWith(o, "vect-cost-model=")) {
      std::string_view v = o.substr(16);
      return v == "unlimited" || v == "dynamic" || v == "cheap" || v == "very-cheap";
    }
    if (StartsWith(o, "visibility=")) return o == "visibility=default" || o == "visibility=hidden";
    if (StartsWith(o, "template-depth=")) return ParseBoundedInt(o.substr(15), 1, 100000);
    if (StartsWith(o, "constexpr-depth=")) return ParseBoundedInt(o.substr(16), 1, 100000);
    return false;
  }
  if (StartsWith(f, "-W")) {
    // Warnings only: -Wl, / -Wa, / -Wp, pass options to the linker, assembler
    // and preprocessor (files, plug-ins), and they need a comma, which no
    // warning name has.
    std::string_view w = f.substr(2);
    if (StartsWith(w, "no-")) w = w.substr(3);
    if (StartsWith(w, "error=")) w = w.substr(6);
    size_t eq = w.find('=');
    std::string_view name = w.substr(0, eq);
    if (name.size() < 2 || !(name[0] >= 'a' && name[0] <= 'z'))
      return name == "error" && eq == w.npos;
    if (!IsLowerWord(name, "-+")) return false;
    return eq == w.npos || IsLowerWord(w.substr(eq + 1), "-");
  }
  return false;
}

// Comma-separated option lists (-Xcompiler=a,b / -Xptxas=a,b).
std::vector<std::string_view> SplitCommas(std::string_view s) {
  std::vector<std::string_view> parts;
  for (;;) {
    size_t c = s.find(',');
    parts.push_back(s.substr(0, c));
    if (c == s.npos) break;
    s = s.substr(c + 1);
  }
  return parts;
}

bool PtxasOptionAllowed(std::string_view o) {
  static const std::set<std::string_view> kExact = {"-v",
                                                    "--verbose",
                                                    "-O0",
                                                    "-O1",
                                                    "-O2",
                                                    "-O3",
                                                    "--warn-on-spills",
                                                    "-warn-spills",
                                                    "--warn-on-local-memory-usage",
                                                    "-warn-lmem-usage",
                                                    "--warn-on-double-precision-use",
                                                    "-warn-double-usage",
                                                    "--allow-expensive-optimizations=true",
                                                    "--allow-expensive-optimizations=false",
                                                    "-allow-expensive-optimizations=true"};
  if (kExact.count(o)) return true;
  for (std::string_view p : {"-dlcm=", "--def-load-cache=", "-dscm=", "--def-store-cache="}) {
    if (StartsWith(o, p)) {
      std::string_view v = o.substr(p.size());
      return v == "ca" || v == "cg" || v == "cs" || v == "lu" || v == "cv" || v == "wb" ||
             v == "wt";
    }
  }
  for (std::string_view p : {"-maxrregcount=", "--maxrregcount="}) {
    if (StartsWith(o, p)) return ParseBoundedInt(o.substr(p.size()), 16, 255);
  }
  return false;
}

bool CudaFlagAllowed(std::string_view f, const std::string& arch) {
  static const std::set<std::string_view> kExact = {"-O0",
                                                    "-O1",
                                                    "-O2",
                                                    "-O3",
                                                    "-lineinfo",
                                                    "--generate-line-info",
                                                    "-use_fast_math",
                                                    "--use_fast_math",
                                                    "--extended-lambda",
                                                    "-extended-lambda",
                                                    "--expt-extended-lambda",
                                                    "-expt-extended-lambda",
                                                    "--expt-relaxed-constexpr",
                                                    "-expt-relaxed-constexpr",
                                                    "--restrict",
                                                    "-restrict",
                                                    "-res-usage",
                                                    "--resource-usage",
                                                    "-w",
                                                    "--disable-warnings",
                                                    "-g",
                                                    "-Wno-deprecated-gpu-targets",
                                                    "-Wno-deprecated-declarations",
                                                    "-lcuda",
                                                    "-lcublasLt",
                                                    "-lm"};
  if (kExact.count(f) || IsMacroFlag(f)) return true;
  if (StartsWith(f, "-std=")) return f == "-std=c++17" || f == "-std=c++20";
  // The device decides the architecture; a candidate may only ask for its
  // arch-specific (sm_90a) or family (sm_100f) feature set.
  if (StartsWith(f, "-arch=")) return f.substr(6) == arch + "a" || f.substr(6) == arch + "f";
  for (std::string_view p : {"-maxrregcount=", "--maxrregcount="}) {
    if (StartsWith(f, p)) return ParseBoundedInt(f.substr(p.size()), 16, 255);
  }
  for (std::string_view p : {"--ftz=", "-ftz=", "--prec-div=", "-prec-div=", "--prec-sqrt=",
                             "-prec-sqrt=", "--fmad=", "-fmad="}) {
    if (StartsWith(f, p)) return f.substr(p.size()) == "true" || f.substr(p.size()) == "false";
  }
  for (std::string_view p : {"--default-stream=", "-default-stream="}) {
    if (StartsWith(f, p))
      return f.substr(p.size()) == "per-thread" || f.substr(p.size()) == "legacy";
  }
  for (std::string_view p : {"--diag-suppress=", "-diag-suppress="}) {
    if (StartsWith(f, p)) {
      auto parts = SplitCommas(f.substr(p.size()));
      return std::all_of(parts.begin(), parts.end(),
                         [](std::string_view n) { return ParseBoundedInt(n, 0, 99999); });
    }
  }
  for (std::string_view p : {"-Xptxas=", "--ptxas-options="}) {
    if (StartsWith(f, p)) {
      auto parts = SplitCommas(f.substr(p.size()));
      return std::all_of(parts.begin(), parts.end(), PtxasOptionAllowed);
    }
  }
  for (std::string_view p : {"-Xcompiler=", "--compiler-options="}) {
    if (StartsWith(f, p)) {
      auto parts = SplitCommas(f.substr(p.size()));
      return std::all_of(parts.begin(), parts.end(),
                         [](std::string_view h) { return HostFlagAllowed(h, true); });
    }
  }
  return false;
}

bool IsOptLevel(std::string_view f) { return f.size() >= 3 && StartsWith(f, "-O"); }

}  // namespace

// ----------------------------------------------------------------- setup ----

Compiler::Compiler(CompilerConfig config, const sandbox::Sandbox* sandbox)
    : config_(std::move(config)), sandbox_(sandbox) {}

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
  if (!StartsWith(config.cuda_arch, "sm_") ||
      !IsLowerWord(std::string_view(config.cuda_arch).substr(3), "")) {
    return absl::InvalidArgumentError(
        fmt::format("cuda_arch: '{}' is not like sm_90", Printable(config.cuda_arch)));
  }
  std::unique_ptr<Compiler> compiler(new Compiler(std::move(config), sandbox));
  RETURN_IF_ERROR(compiler->Init());
  return compiler;
}

absl::Status Compiler::Init() {
  std::error_code ec;
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

  // What the compile sandbox sees besides the toolchain view.
  std::vector<std::string> ro = {config_.include_dir};
  for (const auto& d : config_.extra_include_dirs) ro.push_back(d);
  std::vector<std::string> path_dirs;
  auto add_tool = [&](const std::string& tool, int levels_up) {
    if (tool.empty() || tool[0] != '/') return;
    path_dirs.push_back(fs::path(tool).parent_path().string());
    for (fs::path p : {fs::path(tool), fs::weakly_canonical(tool, ec)}) {
      for (int i = 0; i < levels_up; ++i) p = p.parent_path();
      if (!p.empty() && !InToolchainView(p.string())) ro.push_back(p.string());
    }
  };
  add_tool(config_.cxx, 1);
  add_tool(config_.nvcc, 2);  // nvcc reads <root>/nvvm, <root>/include, <root>/targets
  for (const auto& d : config_.extra_ro_paths) ro.push_back(d);
  for (const auto& p : ro) {
    if (p.empty() || p[0] != '/' || !fs::exists(p, ec)) {
      return absl::FailedPreconditionError(
          fmt::format("compile sandbox path '{}' (include_dir, extra_include_dirs, extra_ro_paths "
                      "or a compiler's folder) does not exist or is not absolute",
                      p));
    }
  }
  std::set<std::string> seen;
  for (auto& p : ro) {
    if (seen.insert(p).second) sandbox_ro_paths_.push_back(p);
  }
  path_dirs.insert(path_dirs.end(), {"/usr/local/bin", "/usr/bin", "/bin"});
  std::set<std::string> on_path;
  for (const auto& d : path_dirs) {
    if (!on_path.insert(d).second) continue;
    sandbox_path_env_ += (sandbox_path_env_.empty() ? "" : ":") + d;
  }

  fs::create_directories(config_.cache_dir, ec);
  if (ec)
    return absl::FailedPreconditionError(
        fmt::format("cache_dir {}: {}", config_.cache_dir, ec.message()));
  work_dir_ = config_.work_dir.empty() ? config_.cache_dir + "/.work" : config_.work_dir;
  for (const std::string& d : {work_dir_, config_.cache_dir + "/.locks"}) {
    if (mkdir(d.c_str(), 0711) != 0 && errno != EEXIST) return ErrnoError("mkdir " + d, errno);
  }
  // The sandbox binds scratch at the same path, possibly as another uid
  // (run_as_uid), which needs search permission on the way there.
  chmod(work_dir_.c_str(), 0711);

  // Scratch directories left by a crashed process (any compile is over after
  // timeout_ms, so older ones are nobody's).
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
  cxx_version_ = ShortVersion(cxx_version_text_, false);
  if (!config_.nvcc.empty()) {
    auto nvcc_text = ProbeVersion(config_.nvcc);
    if (!nvcc_text.ok()) return Annotate(nvcc_text.status(), "nvcc");
    nvcc_version_text_ = *nvcc_text;
    nvcc_version_ = ShortVersion(nvcc_version_text_, true);
    // Candidates may call NCCL and cuBLAS (kernels/README.md). Link a library
    // only where it exists, so a toolkit without NCCL still compiles every
    // candidate that does not use it.
    const fs::path root = fs::weakly_canonical(config_.nvcc, ec).parent_path().parent_path();
    struct utsname u;
    const std::string machine = uname(&u) == 0 ? u.machine : "x86_64";
    std::vector<std::pair<fs::path, bool>> dirs;  // (dir, needs -L)
    for (const auto& t : fs::directory_iterator(root / "targets", ec)) {
      dirs.push_back({t.path() / "lib", false});  // nvcc.profile's own -L
      dirs.push_back({t.path() / "lib64", false});
    }
    for (const char* sub : {"lib64", "lib"}) dirs.push_back({root / sub, true});
    for (std::string d : {"/usr/lib/" + machine + "-linux-gnu", std::string("/usr/lib64"),
                          std::string("/usr/lib"), std::string("/usr/local/lib")}) {
      dirs.push_back({d, false});  // the linker's default search path
    }
    std::vector<std::string> found;
    for (const char* lib : {"nccl", "cublas"}) {
      bool have = false;
      for (const auto& [dir, needs_l] : dirs) {
        std::error_code ec2;
        if (!fs::exists(dir / fmt::format("lib{}.so", lib), ec2)) continue;
        if (needs_l) {
          const std::string l = "-L" + dir.string();
          if (std::find(cuda_link_args_.begin(), cuda_link_args_.end(), l) ==
              cuda_link_args_.end()) {
            cuda_link_args_.push_back(l);
          }
        }
        have = true;
        break;
      }
      if (have) {
        found.push_back(lib);
      } else {
        spdlog::warn(
            "compiler: lib{}.so not found near {} or in the system library folders; cuda "
            "candidates are linked without -l{}",
            lib, config_.nvcc, lib);
      }
    }
    for (const auto& lib : found) cuda_link_args_.push_back("-l" + lib);
  }
  RETURN_IF_ERROR(ScanAndEvict(""));
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
  return p;
}

absl::StatusOr<std::string> Compiler::ProbeVersion(const std::string& compiler) const {
  ASSIGN_OR_RETURN(std::string scratch, MakeScratch());
  sandbox::SandboxPolicy policy = Policy(scratch);
  policy.timeout_ms = kProbeTimeoutMs;
  policy.cpu_seconds = kProbeTimeoutMs / 1000;
  policy.max_output_bytes = 64 * 1024;
  auto r = sandbox_->Run({compiler, "--version"}, policy);
  std::error_code ec;
  fs::remove_all(scratch, ec);
  if (!r.ok()) {
    return Annotate(r.status(),
                    fmt::format("running '{} --version' in the compile sandbox", compiler));
  }
  if (!r->ok() || r->stdout_data.empty()) {
    return absl::FailedPreconditionError(
        fmt::format("'{} --version' failed in the compile sandbox (exit {}, signal {}{}): {}",
                    compiler, r->exit_code, r->term_signal, r->timed_out ? ", timed out" : "",
                    SanitizeText(r->stderr_data.substr(0, 2000))));
  }
  return r->stdout_data;
}

// ----------------------------------------------------------------- flags ----

std::string Compiler::AllowedFlagsSummary(v1::Backend backend) {
  const std::string forbidden =
      "never -o, -I, -L, -l<other>, -B, @file, -fplugin, -wrapper, -specs, --compiler-bindir, "
      "-Xlinker, -Wl,/-Wa,/-Wp, or two-word forms (use '=')";
  if (backend == v1::BACKEND_CUDA) {
    return "-O0..-O3, -DNAME[=VALUE], -UNAME, -lineinfo, --use_fast_math, -maxrregcount=N, "
           "-Xptxas=-v[,-O3,-warn-spills,-dlcm=ca,...], -Xcompiler=<host flags, comma-separated>, "
           "-std=c++17|c++20, -arch=<device arch>a|f, --extended-lambda, "
           "--expt-relaxed-constexpr, --ftz|--prec-div|--prec-sqrt|--fmad=true|false, "
           "--restrict, --resource-usage, --default-stream=per-thread|legacy, "
           "--diag-suppress=N[,N], -w, -g, -Wno-deprecated-gpu-targets, -lcuda, -lcublasLt, -lm "
           "(-lnccl -lcublas are always linked); " +
           forbidden;
  }
  return "-O0..-O3, -Os, -Ofast, -DNAME[=VALUE], -UNAME, -g, -std=c++17|c++20|c++23 (or gnu++), "
         "-march=CPU|native, -mtune=CPU|native, -m<ISA> (avx2, avx512*, fma, f16c, bmi2, amx-*, "
         "...), -f<opt> (fast-math, unroll-loops, tree-vectorize, openmp, no-exceptions, "
         "fp-contract=fast, ...), -W<warning>, -w, -pthread, -fopenmp, -lm, -lrt, -latomic; " +
         forbidden;
}

absl::Status Compiler::ValidateFlags(v1::Backend backend,
                                     const std::vector<std::string>& flags) const {
  if (backend != v1::BACKEND_HOST && backend != v1::BACKEND_CUDA) {
    return absl::InvalidArgumentError(
        fmt::format("backend: {} is not host or cuda", static_cast<int>(backend)));
  }
  if (flags.size() > kMaxFlags) {
    return absl::InvalidArgumentError(
        fmt::format("extra_flags: {} flags, at most {}", flags.size(), kMaxFlags));
  }
  const std::string_view name = backend == v1::BACKEND_CUDA ? "cuda" : "host";
  for (size_t i = 0; i < flags.size(); ++i) {
    const std::string& f = flags[i];
    const bool allowed = f.size() <= kMaxFlagLength &&
                         (backend == v1::BACKEND_CUDA ? CudaFlagAllowed(f, config_.cuda_arch)
                                                      : HostFlagAllowed(f, false));
    if (!allowed) {
      return absl::InvalidArgumentError(
          fmt::format("extra_flags[{}]: '{}' is not allowed for the {} backend; allowed: {}", i,
                      Printable(f), name, AllowedFlagsSummary(backend)));
    }
  }
  return absl::OkStatus();
}

std::vector<std::string> Compiler::CompilerArgs(const CompileRequest& request) const {
  const bool cuda = request.backend == v1::BACKEND_CUDA;
  bool user_opt = false, user_std = false, user_arch = false;
  std::vector<std::string> user, user_libs;
  for (const auto& f : request.extra_flags) {
    // nvcc refuses a repeated -O/-std/-arch ("redefinition of argument"), and
    // for g++ the user's choice would win anyway: the user's replaces ours.
    user_opt |= IsOptLevel(f);
    user_std |= StartsWith(f, "-std=");
    user_arch |= StartsWith(f, "-arch=");
    (StartsWith(f, "-l") ? user_libs : user).push_back(f);
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
    args.insert(args.end(), {"-shared", "-fPIC", "-pthread"});
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
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

// ----------------------------------------------------------------- cache ----

std::shared_ptr<const Compiler::Entry> Compiler::Lookup(const std::string& key,
                                                        std::string* damage) const {
  damage->clear();
  const std::string base = config_.cache_dir + "/" + key;
  auto meta_text = ReadRegularFile(base + ".json", kMaxMetaBytes);
  if (!meta_text.ok()) {
    if (!absl::IsNotFound(meta_text.status())) *damage = meta_text.status().ToString();
    return nullptr;
  }
  auto entry = std::make_shared<Entry>();
  std::string so_sha;
  int64_t so_bytes = -1;
  try {
    const auto j = nlohmann::json::parse(*meta_text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object() || j.value("format", 0) != kMetaFormat ||
        j.value("key", std::string()) != key) {
      *damage = "metadata is not a format-1 object for this key";
      return nullptr;
    }
    entry->ok = j.at("ok").get<bool>();
    entry->compiler = j.at("compiler").get<std::string>();
    entry->flags = j.at("flags").get<std::vector<std::string>>();
    entry->output = j.at("output").get<std::string>();
    entry->output_truncated = j.at("output_truncated").get<bool>();
    entry->compile_ms = j.at("compile_ms").get<double>();
    if (entry->ok) {
      so_bytes = j.at("artifact_bytes").get<int64_t>();
      so_sha = j.at("artifact_content_sha256").get<std::string>();
    }
  } catch (const nlohmann::json::exception& e) {
    *damage = fmt::format("bad metadata: {}", e.what());
    return nullptr;
  }
  if (entry->ok) {
    auto so = ReadRegularFile(base + ".so", config_.max_artifact_bytes, so_bytes);
    if (!so.ok() || Sha256Hex(*so) != so_sha) {
      *damage = so.ok() ? "library content does not match its sha256" : so.status().ToString();
      return nullptr;
    }
    entry->artifact = std::make_shared<const std::string>(std::move(*so));
  }
  return entry;
}

void Compiler::RemoveEntry(const std::string& key) const {
  // Metadata first: without it the library is an orphan, never served.
  const std::string base = config_.cache_dir + "/" + key;
  unlink((base + ".json").c_str());
  unlink((base + ".so").c_str());
}

absl::Status Compiler::Store(const std::string& key, const Entry& entry) {
  nlohmann::json j = {{"format", kMetaFormat},
                      {"key", key},
                      {"ok", entry.ok},
                      {"compiler", entry.compiler},
                      {"flags", entry.flags},
                      {"output", entry.output},
                      {"output_truncated", entry.output_truncated},
                      {"compile_ms", entry.compile_ms}};
  if (entry.ok) {
    // Library before metadata: metadata that exists names a complete library.
    RETURN_IF_ERROR(WriteFileAtomic(config_.cache_dir, key + ".so", *entry.artifact, 0444));
    j["artifact_bytes"] = static_cast<int64_t>(entry.artifact->size());
    j["artifact_content_sha256"] = Sha256Hex(*entry.artifact);
  }
  RETURN_IF_ERROR(WriteFileAtomic(config_.cache_dir, key + ".json",
                                  j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                                  0444));
  return ScanAndEvict(key);
}

absl::Status Compiler::ScanAndEvict(const std::string& keep) {
  // The directory, not this process's memory, is the truth: other executors
  // may share it. One scanner at a time, so two never both evict for the
  // same excess.
  FileLock lock;
  RETURN_IF_ERROR(lock.Acquire(config_.cache_dir + "/.lock", false, nullptr));
  struct Item {
    int64_t bytes = 0;
    struct timespec used = {0, 0};
    bool has_meta = false;
  };
  std::map<std::string, Item> items;
  const auto now = std::chrono::system_clock::now();
  auto is_stale = [&](const struct stat& st) {
    auto t = std::chrono::system_clock::time_point(std::chrono::seconds(st.st_mtim.tv_sec));
    return now - t > kStaleAge;
  };
  DIR* dir = opendir(config_.cache_dir.c_str());
  if (dir == nullptr) return ErrnoError("opendir " + config_.cache_dir, errno);
  for (struct dirent* e = readdir(dir); e != nullptr; e = readdir(dir)) {
    const std::string name = e->d_name;
    const std::string path = config_.cache_dir + "/" + name;
    struct stat st;
    if (fstatat(dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (StartsWith(name, ".tmp-")) {
      if (is_stale(st)) unlink(path.c_str());  // a crashed writer's leftovers
      continue;
    }
    const size_t dot = name.rfind('.');
    if (dot == std::string::npos || !IsHexKey(std::string_view(name).substr(0, dot))) continue;
    const std::string key = name.substr(0, dot);
    const std::string ext = name.substr(dot);
    if (ext != ".json" && ext != ".so") continue;
    Item& item = items[key];
    item.bytes += st.st_size;
    if (ext == ".json") {
      item.has_meta = true;
      item.used = st.st_mtim;
    } else if (!item.has_meta) {
      item.used = st.st_mtim;
    }
  }
  closedir(dir);

  int64_t total = 0;
  std::vector<std::pair<struct timespec, std::string>> order;
  for (auto it = items.begin(); it != items.end();) {
    struct stat st;
    // A library without metadata is a writer's first half (young) or the
    // remains of a crash or a half-done eviction (old: removed).
    if (!it->second.has_meta &&
        stat((config_.cache_dir + "/" + it->first + ".so").c_str(), &st) == 0 && is_stale(st)) {
      RemoveEntry(it->first);
      it = items.erase(it);
      continue;
    }
    total += it->second.bytes;
    order.push_back({it->second.used, it->first});
    ++it;
  }
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.first.tv_sec != b.first.tv_sec ? a.first.tv_sec < b.first.tv_sec
                                            : a.first.tv_nsec < b.first.tv_nsec;
  });
  int64_t evicted = 0;
  int64_t entries = static_cast<int64_t>(items.size());
  for (const auto& [used, key] : order) {
    if (total <= config_.cache_max_bytes) break;
    if (key == keep) continue;
    RemoveEntry(key);
    total -= items[key].bytes;
    --entries;
    ++evicted;
    spdlog::debug("compiler: evicted {} ({} bytes)", key, items[key].bytes);
  }
  std::lock_guard<std::mutex> guard(mu_);
  stats_.evictions += evicted;
  stats_.bytes = total;
  stats_.entries = entries;
  return absl::OkStatus();
}

// --------------------------------------------------------------- compile ----

absl::StatusOr<Compiler::Produced> Compiler::RunCompiler(const CompileRequest& request,
                                                         const std::string& key,
                                                         const std::vector<std::string>& args,
                                                         const std::atomic<bool>* cancel) {
  const bool cuda = request.backend == v1::BACKEND_CUDA;
  const std::string& compiler = cuda ? config_.nvcc : config_.cxx;
  ASSIGN_OR_RETURN(std::string scratch, MakeScratch());
  struct Cleanup {
    std::string dir;
    // remove_all never follows symlinks, and the sandbox is gone by now.
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{scratch};
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
  auto entry = std::make_shared<Entry>();
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
    produced.cacheable = true;  // the same source fails the same way
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
    std::lock_guard<std::mutex> lock(mu_);
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
  RETURN_IF_ERROR(key_lock.Acquire(config_.cache_dir + "/.locks/" + key, true, cancel));
  std::string damage;
  if (auto hit = Lookup(key, &damage)) {
    utimensat(AT_FDCWD, (config_.cache_dir + "/" + key + ".json").c_str(), nullptr,
              AT_SYMLINK_NOFOLLOW);
    on_start(true);
    return Produced{std::move(hit), true, false};
  }
  if (!damage.empty()) {
    // Logged here, under the key's lock, once per damaged entry; the lock-free
    // first look in Compile() just falls through to this one.
    spdlog::warn("compiler: cache entry {} is damaged ({}); recompiling", key, damage);
    RemoveEntry(key);  // we hold the key: nobody is writing it
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.misses;
  }
  on_start(false);
  ASSIGN_OR_RETURN(Produced produced, RunCompiler(request, key, args, cancel));
  if (produced.cacheable) {
    absl::Status stored = Store(key, *produced.entry);
    // The caller still gets its library; only later requests pay again.
    if (!stored.ok()) spdlog::warn("compiler: caching {} failed: {}", key, stored.ToString());
  }
  return produced;
}

absl::StatusOr<CompileOutcome> Compiler::Finish(const Entry& entry, const std::string& key,
                                                bool cache_hit, const std::string& dest_dir) const {
  CompileOutcome out;
  out.ok = entry.ok;
  out.timed_out = entry.timed_out;
  out.info.set_cache_hit(cache_hit);
  out.info.set_compile_ms(cache_hit ? 0 : entry.compile_ms);
  out.info.set_compiler(entry.compiler);
  for (const auto& f : entry.flags) out.info.add_flags(f);
  out.info.set_output(entry.output);
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
    if (auto hit = Lookup(key, &damage)) {
      utimensat(AT_FDCWD, (config_.cache_dir + "/" + key + ".json").c_str(), nullptr,
                AT_SYMLINK_NOFOLLOW);
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++stats_.hits;
      }
      start_once(true);
      return Finish(*hit, key, true, dest_dir);
    }
    std::shared_ptr<Flight> flight;
    bool leader = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      auto it = flights_.find(key);
      if (it == flights_.end()) {
        flight = std::make_shared<Flight>();
        flights_.emplace(key, flight);
        leader = true;
      } else {
        flight = it->second;
        // Timed waits: our own cancel flag is polled, not signalled.
        while (!flight->done && !IsCancelled(cancel)) {
          flight_done_.wait_for(lock, kPollInterval * 4);
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
        std::lock_guard<std::mutex> lock(mu_);
        ++stats_.joined;
      }
      start_once(true);
      ASSIGN_OR_RETURN(CompileOutcome out, Finish(*r->entry, key, true, dest_dir));
      out.joined = true;
      return out;
    }
    absl::StatusOr<Produced> produced = Lead(request, key, args, cancel, start_once);
    {
      std::lock_guard<std::mutex> lock(mu_);
      flight->result = produced;
      flight->done = true;
      flights_.erase(key);
      if (produced.ok() && produced->from_cache) ++stats_.hits;
    }
    flight_done_.notify_all();
    if (!produced.ok()) return produced.status();
    return Finish(*produced->entry, key, produced->from_cache, dest_dir);
  }
}

}  // namespace pkforge::executor

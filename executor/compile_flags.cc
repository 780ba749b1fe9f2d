#include "executor/compile_flags.h"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <set>

#include "fmt/format.h"

namespace pkforge::executor {

namespace {

constexpr int kMaxFlags = 64;
constexpr size_t kMaxFlagLength = 256;

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

}  // namespace

bool IsOptLevelFlag(std::string_view f) { return f.size() >= 3 && StartsWith(f, "-O"); }

bool IsCudaArchName(std::string_view arch) {
  return StartsWith(arch, "sm_") && IsLowerWord(arch.substr(3), "");
}

std::string PrintableForMessage(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 120)) {
    const auto u = static_cast<unsigned char>(c);
    out += (u >= 0x20 && u < 0x7f) ? std::string(1, c) : fmt::format("\\x{:02x}", u);
  }
  if (s.size() > 120) out += "...";
  return out;
}

std::string AllowedCompileFlagsSummary(v1::Backend backend) {
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

absl::Status ValidateCompileFlags(v1::Backend backend, const std::vector<std::string>& flags,
                                  const std::string& cuda_arch) {
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
    const bool allowed =
        f.size() <= kMaxFlagLength &&
        (backend == v1::BACKEND_CUDA ? CudaFlagAllowed(f, cuda_arch) : HostFlagAllowed(f, false));
    if (!allowed) {
      return absl::InvalidArgumentError(
          fmt::format("extra_flags[{}]: '{}' is not allowed for the {} backend; allowed: {}", i,
                      PrintableForMessage(f), name, AllowedCompileFlagsSummary(backend)));
    }
  }
  return absl::OkStatus();
}

}  // namespace pkforge::executor

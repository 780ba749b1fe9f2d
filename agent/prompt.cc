#include "agent/prompt.h"

#include <algorithm>
#include <cmath>

#include "agent/candidate_abi_text.h"  // generated: kCandidateAbiText
#include "fmt/format.h"

namespace pkforge::agent {
namespace {

std::string Clip(std::string_view s, size_t n, std::string_view what) {
  if (s.size() <= n) return std::string(s);
  return fmt::format("{}\n... [{} truncated: {} more bytes]", s.substr(0, n), what, s.size() - n);
}

// Last `n` bytes (stderr tails end with the interesting part).
std::string Tail(std::string_view s, size_t n) {
  if (s.size() <= n) return std::string(s);
  return fmt::format("[... {} earlier bytes]\n{}", s.size() - n, s.substr(s.size() - n));
}

std::string Num(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.6g}", v);
}

std::string PhaseName(v1::Phase p) {
  std::string n = v1::Phase_Name(p);
  if (n.rfind("PHASE_", 0) == 0) n = n.substr(6);
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return std::tolower(c); });
  return n;
}

std::string CodeLang(v1::Backend b) { return b == v1::BACKEND_HOST ? "cpp" : "cuda"; }

std::string Timing(const char* who, const v1::TimingStats& t) {
  return fmt::format("{} median {} us (p10 {}, p90 {}, mean {}, CV {:.3f}, {} samples)", who,
                     Num(t.median_us()), Num(t.p10_us()), Num(t.p90_us()), Num(t.mean_us()), t.cv(),
                     t.samples());
}

constexpr std::string_view kRole =
    "You are an expert GPU kernel engineer. You optimize one multi-GPU kernel through repeated "
    "attempts. Each attempt is one complete candidate source file; pkforge compiles it, runs it on "
    "every rank against a reference implementation on fresh random inputs, times both in the same "
    "run and reports back: compile errors, mismatches, timings, speedup and % of roofline. Aim for "
    "a correct candidate first, then for speed.";

std::string Rules(v1::Backend backend) {
  const bool cuda = backend != v1::BACKEND_HOST;
  std::string r = "Rules:\n";
  if (cuda) {
    r += "- One CUDA C++ file, compiled with `nvcc -shared` for the GPUs listed under Hardware. "
         "Include only \"pkforge/candidate.h\" plus CUDA, NCCL and standard headers.\n"
         "- pkf_run enqueues the whole computation on `stream`; everything must be finished when "
         "`stream` is synchronized: no other stream, thread or process may still be working on the "
         "outputs.\n";
  } else {
    r += "- One C++20 file, compiled with `g++ -shared -fPIC -O2`. Include only "
         "\"pkforge/candidate.h\" plus standard headers.\n"
         "- Ranks are separate processes; pkf_run runs synchronously (stream is NULL) and must be "
         "finished when it returns. ctx->peer_scratch points into one shared-memory segment mapped "
         "by every rank; ctx->barrier(ctx) synchronizes all ranks.\n";
  }
  r +=
      "- Export pkf_run with C linkage (extern \"C\"); pkf_setup and pkf_teardown are optional and "
      "run outside the timed region, before any input is known.\n"
      "- Inputs and outputs are fresh buffers for every trial, row-major and contiguous. Exchange "
      "data between ranks only through ctx->peer_scratch (ctx->scratch_bytes per rank; do not "
      "assume it is larger than your data: chunk) and signal through ctx->peer_flags "
      "(zeroed before pkf_setup).\n"
      "- No tricks: outputs are re-verified on timed iterations with changed inputs, inputs are "
      "checked for mutation, outputs are poisoned before each call, results are compared across "
      "runs, and forbidden calls are flagged. Caching results, reading the reference or escaping "
      "the timer fails the candidate.\n";
  return r;
}

constexpr std::string_view kPrinciples =
    "Multi-GPU design principles (public figures, approximate; where they disagree with the "
    "measured ceilings under Hardware, trust the measurements):\n"
    "- Communication dominates more each generation: from A100 to B200 tensor-core throughput "
    "grew about 7.2x, HBM bandwidth 5.1x, NVLink bandwidth 3x and inter-node bandwidth 2x. Count "
    "the bytes that must cross the interconnect first.\n"
    "Transfer mechanisms, and when each wins:\n"
    "- Copy engine (cudaMemcpyAsync between peer-mapped buffers): frees every SM, but needs very "
    "large transfers (hundreds of MB) to reach peak NVLink bandwidth; a poor choice for small or "
    "fine-grained messages.\n"
    "- TMA (bulk asynchronous copies): saturates NVLink with messages of a few KB from a small "
    "number of SMs (about 15 on B200), leaving the other SMs free.\n"
    "- Register-level loads/stores through peer pointers: need many more SMs for the same "
    "bandwidth (about 76 on B200), but they are the way to do element-wise work on the fly "
    "(reduce while loading, vectorized 16-byte accesses) and the way to use in-switch reductions.\n"
    "- In-network reduction (NVLink SHARP, multimem.ld_reduce / multimem.st): the switch reduces, "
    "roughly halving all-reduce traffic, where the system supports it.\n"
    "- NCCL is strong for large contiguous collectives and weak for small, fused or irregular "
    "ones; beating it usually means fusion, finer granularity, or the right mechanism for the "
    "size.\n"
    "Scheduling:\n"
    "- Overlap communication and compute either inside an SM (warp-specialized loader, consumer, "
    "storer and communicator roles) or across SMs (a set of SMs dedicated to communication); "
    "choose the number of communication SMs deliberately.\n"
    "Overheads:\n"
    "- Synchronization: fine-grained signalling (per-chunk flags with release/acquire at system "
    "scope) beats global barriers; avoid host round-trips per step.\n"
    "- Buffering: pipeline chunks through the scratch buffers (double buffering) instead of "
    "staging everything; at small sizes latency (launches, barriers), not bandwidth, decides.\n";

constexpr std::string_view kPrinciplesShort =
    "Multi-GPU principles (short): count interconnect bytes first; copy engine only for very "
    "large transfers, TMA for KB-sized messages from few SMs, register loads/stores for "
    "element-wise work and in-switch reductions; overlap via warp specialization or dedicated "
    "communication SMs; fine-grained flags beat global barriers; chunk and double-buffer through "
    "scratch. Measured ceilings under Hardware override any figure.\n";

constexpr std::string_view kHostNote =
    "Host backend note: ranks are processes sharing one memory segment, so memory bandwidth, "
    "cache locality and the number of barriers decide; the GPU mechanisms above are background.\n";

std::string Hardware(const v1::DeviceInfo& d, v1::Backend backend, int world) {
  std::string h = "## Hardware\n";
  h += fmt::format("backend {}, world size {}", BackendName(backend), world);
  if (!d.hostname().empty()) h += fmt::format(", host {}", d.hostname());
  h += "\n";
  if (backend != v1::BACKEND_HOST) {
    for (const auto& g : d.gpus()) {
      h += fmt::format(
          "- GPU {}: {} (sm_{}{}), {} SMs, {:.0f} GiB, L2 {:.0f} MiB, SM clock {} MHz, memory "
          "clock {} MHz{}\n",
          g.index(), g.name(), g.compute_capability_major(), g.compute_capability_minor(),
          g.sm_count(), static_cast<double>(g.memory_bytes()) / (1 << 30),
          static_cast<double>(g.l2_bytes()) / (1 << 20), g.sm_clock_max_mhz(),
          g.mem_clock_max_mhz(), g.healthy() ? "" : " [unhealthy]");
    }
    int shown = 0;
    for (const auto& l : d.topology()) {
      if (shown++ >= 16) {
        h += fmt::format("- ... {} more links\n", d.topology_size() - 16);
        break;
      }
      h += fmt::format(
          "- link {}->{}: {}{}{}\n", l.src(), l.dst(), l.link().empty() ? "?" : l.link(),
          l.p2p_access() ? ", peer access" : ", no peer access",
          l.measured_gbps() > 0 ? fmt::format(", copy engine {:.0f} GB/s", l.measured_gbps()) : "");
    }
  } else if (d.cpu_cores() > 0) {
    h += fmt::format("- {} CPU cores\n", d.cpu_cores());
  }
  const auto& c = d.ceilings();
  std::string ceil;
  if (c.peer_gbps() > 0)
    ceil += fmt::format(" peer {:.0f} GB/s per GPU per direction;", c.peer_gbps());
  if (c.hbm_gbps() > 0) ceil += fmt::format(" HBM {:.0f} GB/s;", c.hbm_gbps());
  if (c.bf16_tflops() > 0) ceil += fmt::format(" bf16 {:.0f} TFLOP/s;", c.bf16_tflops());
  if (c.host_memory_gbps() > 0)
    ceil += fmt::format(" host memcpy {:.1f} GB/s;", c.host_memory_gbps());
  if (!ceil.empty()) {
    h += fmt::format("- ceilings ({}):{}\n", c.source().empty() ? "unknown source" : c.source(),
                     ceil);
  }
  std::string ver;
  if (!d.cuda_toolkit_version().empty()) ver += " CUDA " + d.cuda_toolkit_version();
  if (!d.driver_version().empty()) ver += ", driver " + d.driver_version();
  if (!d.nccl_version().empty()) ver += ", NCCL " + d.nccl_version();
  if (!ver.empty() && backend != v1::BACKEND_HOST) h += "- software:" + ver + "\n";
  return h;
}

std::string Tensors(const char* what,
                    const google::protobuf::RepeatedPtrField<v1::TensorSpec>& ts) {
  std::string s;
  for (const auto& t : ts) {
    std::string shape;
    for (int i = 0; i < t.shape_size(); ++i) shape += (i ? ", " : "") + std::to_string(t.shape(i));
    s += fmt::format("- {} `{}`: {} [{}]\n", what, t.name(), DtypeName(t.dtype()), shape);
  }
  return s;
}

std::string ProblemSection(const v1::JobSpec& spec, const v1::ProblemInfo& p) {
  std::string s = fmt::format("## Problem: {}{}\n", p.name().empty() ? spec.problem() : p.name(),
                              p.category().empty() ? "" : " (" + p.category() + ")");
  s += p.statement_markdown();
  if (!s.empty() && s.back() != '\n') s += "\n";
  std::string size = spec.size().has_dims() ? "explicit dims" : spec.size().preset();
  if (spec.size().has_dims()) {
    size = "";
    for (const auto& [k, v] : spec.size().dims().values()) size += fmt::format("{}={} ", k, v);
  }
  s += fmt::format("\nThis job: world size {}, dtype {}, size {}.\n", spec.world_size(),
                   DtypeName(spec.dtype()), size.empty() ? "default" : size);
  if (p.inputs_size() + p.outputs_size() > 0) {
    s += "Tensors of one rank:\n" + Tensors("input", p.inputs()) + Tensors("output", p.outputs());
  }
  if (p.forbidden_calls_size() > 0) {
    s += "Forbidden calls (flagged by a static scan):";
    for (const auto& f : p.forbidden_calls()) s += " " + f;
    s += "\n";
  }
  return s;
}

}  // namespace

int64_t EstimateTokens(std::string_view text) {
  return static_cast<int64_t>((text.size() + 3) / 4);
}

std::string SummarizeResult(const v1::EvaluationResult& r) {
  std::string s(StatusName(r.status()));
  if (r.status() == v1::EvaluationResult::OK && r.has_speedup()) {
    s += fmt::format(", {:.3f}x vs reference", r.speedup());
    if (r.roofline().candidate_fraction() > 0) {
      s += fmt::format(", {:.0f}% of roofline", 100.0 * r.roofline().candidate_fraction());
    }
  }
  return s;
}

std::string RenderResult(const v1::EvaluationResult& r, const RenderLimits& limits) {
  std::string s = fmt::format("status: {}", StatusName(r.status()));
  if (!r.message().empty()) s += " -- " + r.message();
  s += "\n";
  const auto& c = r.compile();
  if (!c.output().empty() &&
      (r.status() == v1::EvaluationResult::COMPILE_ERROR || c.output().size() < 600)) {
    s += fmt::format("compiler output ({}):\n```\n{}\n```\n",
                     c.compiler().empty() ? "compiler" : c.compiler(),
                     Clip(c.output(), limits.compiler_output_chars, "compiler output"));
  }
  for (const auto& f : r.failures()) {
    s += fmt::format("failure: rank {} in {}: {}", f.rank(), PhaseName(f.phase()), f.error());
    if (f.signal() != 0) s += fmt::format(" (signal {})", f.signal());
    if (f.exit_code() != 0) s += fmt::format(" (exit code {})", f.exit_code());
    s += "\n";
    if (!f.stderr_tail().empty()) {
      s += fmt::format("stderr:\n```\n{}\n```\n", Tail(f.stderr_tail(), limits.stderr_chars));
    }
  }
  if (r.status() == v1::EvaluationResult::TIMEOUT || r.has_timeout()) {
    const auto& t = r.timeout();
    if (t.phase() != v1::PHASE_UNSPECIFIED || t.limit_s() > 0) {
      s += fmt::format("timeout in {} after {} s", PhaseName(t.phase()), Num(t.limit_s()));
      if (t.deadlock())
        s += " (deadlock across ranks: some ranks waited for others that never came)";
      if (t.stuck_ranks_size() > 0) {
        s += "; stuck ranks:";
        for (int rk : t.stuck_ranks()) s += " " + std::to_string(rk);
      }
      s += "\n";
    }
  }
  const auto& corr = r.correctness();
  if (corr.trials() > 0) {
    s += fmt::format("correctness: {} of {} trials passed\n", corr.trials_passed(), corr.trials());
    int shown = 0;
    for (const auto& ch : corr.checks()) {
      if (ch.mismatches() == 0 && !ch.unwritten()) continue;
      if (shown++ >= limits.max_output_checks) {
        s += "- ... more failing checks omitted\n";
        break;
      }
      s += fmt::format("- trial {} rank {} output `{}`: {} of {} elements mismatch", ch.trial(),
                       ch.rank(), ch.output(), ch.mismatches(), ch.elements());
      s += fmt::format(" (atol {}, rtol {}); max abs error {}, max rel error {}", Num(ch.atol()),
                       Num(ch.rtol()), Num(ch.max_abs_error()), Num(ch.max_rel_error()));
      if (ch.first_mismatch_index() >= 0) {
        s += fmt::format("; first mismatch at flat index {}", ch.first_mismatch_index());
        if (ch.first_mismatch_coords_size() > 0) {
          std::string co;
          for (int i = 0; i < ch.first_mismatch_coords_size(); ++i) {
            co += (i ? ", " : "") + std::to_string(ch.first_mismatch_coords(i));
          }
          s += " [" + co + "]";
        }
        s += fmt::format(": expected {}, got {}", Num(ch.expected()), Num(ch.actual()));
      }
      if (ch.unwritten()) s += " -- the output still holds the poison pattern (never written)";
      s += "\n";
    }
  }
  for (const auto& cc : r.cheat_checks()) {
    if (cc.passed()) continue;
    s += fmt::format("anti-cheat check `{}` {}: {}\n", cc.check(),
                     cc.flag_only() ? "flagged for review" : "FAILED", cc.detail());
  }
  if (r.reference().samples() > 0) s += Timing("reference", r.reference()) + "\n";
  if (r.candidate().samples() > 0) s += Timing("candidate", r.candidate()) + "\n";
  if (r.has_speedup()) {
    s += fmt::format("speedup: {:.3f}x (median reference / median candidate; above 1 is faster)\n",
                     r.speedup());
  }
  const auto& rf = r.roofline();
  if (rf.roofline_us() > 0) {
    s += fmt::format("roofline: {} us, {}-bound ({:.3g} interconnect bytes per rank)",
                     Num(rf.roofline_us()), rf.bound().empty() ? "?" : rf.bound(),
                     rf.interconnect_bytes());
    if (rf.candidate_fraction() > 0) {
      s += fmt::format("; candidate at {:.1f}% of roofline, reference at {:.1f}%",
                       100 * rf.candidate_fraction(), 100 * rf.reference_fraction());
    }
    s += "\n";
  }
  if (rf.candidate_bus_gbps() > 0) {
    s += fmt::format("bus bandwidth: candidate {:.1f} GB/s, reference {:.1f} GB/s\n",
                     rf.candidate_bus_gbps(), rf.reference_bus_gbps());
  }
  for (const auto& f : r.flags()) s += "flag: " + f + "\n";
  const auto& prof = r.profile();
  if (!prof.text().empty()) {
    s += fmt::format("profile ({}):\n```\n{}\n```\n", prof.tool(),
                     Clip(prof.text(), limits.profile_chars, "profile"));
  } else if (prof.kernels_size() > 0) {
    s += "profile:\n";
    for (const auto& k : prof.kernels()) {
      s += fmt::format(
          "- kernel {} x{}: {} us, DRAM {:.0f}% of peak, NVLink {:.0f} GB/s, occupancy {:.0f}%, SM "
          "{:.0f}%\n",
          k.name(), k.invocations(), Num(k.duration_us()), k.dram_throughput_pct(), k.nvlink_gbps(),
          k.achieved_occupancy_pct(), k.sm_throughput_pct());
    }
  } else if (!prof.error().empty()) {
    s += "profiling failed: " + prof.error() + "\n";
  }
  const auto& san = r.sanitizer();
  if (!san.tool().empty()) {
    s += fmt::format("compute-sanitizer {}: {} errors\n", san.tool(), san.errors());
    if (!san.text().empty()) {
      s +=
          fmt::format("```\n{}\n```\n", Clip(san.text(), limits.profile_chars, "sanitizer report"));
    }
  }
  return s;
}

std::string ReplyFormatInstructions(v1::Backend backend) {
  const std::string lang = CodeLang(backend);
  return fmt::format(
      "Reply format -- exactly one of:\n"
      "1. A complete file in one fenced code block:\n"
      "```{0}\n"
      "#include \"pkforge/candidate.h\"\n"
      "...\n"
      "```\n"
      "2. Edits to the current file (shown under \"Current file\") as one or more blocks:\n"
      "<<<<<<< SEARCH\n"
      "exact lines copied from the current file\n"
      "=======\n"
      "the lines that replace them\n"
      ">>>>>>> REPLACE\n"
      "Each SEARCH text must match the current file exactly (including whitespace) and exactly "
      "once; blocks are applied in order. Use edits for focused changes and a full file for "
      "rewrites. Brief reasoning before the code is welcome; only the code is used. A reply "
      "without code, an edit that does not apply or a file without pkf_run wastes the attempt.\n",
      lang);
}

Prompt BuildPrompt(const PromptInputs& in) {
  const v1::JobSpec& spec = *in.spec;
  const v1::Backend backend = spec.backend();
  const std::string lang = CodeLang(backend);

  // Fixed parts (never trimmed).
  std::string system_fixed = std::string(kRole) + "\n\n" + Rules(backend) +
                             "\nThe candidate ABI (pkforge/candidate.h):\n```c\n" +
                             std::string(kCandidateAbiText) + "\n```\n\n" +
                             ReplyFormatInstructions(backend);
  const std::string host_note = backend == v1::BACKEND_HOST ? std::string(kHostNote) : "";
  const std::string hardware = Hardware(*in.device, backend, spec.world_size());
  const std::string problem = ProblemSection(spec, *in.problem);
  std::string current;
  if (!in.base_source.empty()) {
    current = fmt::format("## Current file{}\n```{}\n{}\n```\n",
                          in.base_description.empty() ? "" : " (" + in.base_description + ")", lang,
                          in.base_source);
  } else {
    current =
        "## Current file\nNone yet: write a complete file (edits need a current file to apply "
        "to).\n";
  }
  std::string task =
      "## Your task\nWrite a correct candidate that is faster than the reference on this "
      "hardware. Use the feedback above: fix what failed, keep what worked, and change one "
      "important thing at a time when refining a correct candidate.\n";
  if (!in.extra_instruction.empty()) task += in.extra_instruction + "\n";

  // Trimmable parts.
  std::string principles(kPrinciples);
  const std::string& ref_src = in.problem->reference_source();
  std::string reference;
  auto render_reference = [&](size_t keep) {
    if (ref_src.empty()) return std::string();
    std::string body = ref_src.substr(0, keep);
    if (keep < ref_src.size()) {
      body += fmt::format("\n// ... [reference truncated to fit the context: {} more bytes]",
                          ref_src.size() - keep);
    }
    return fmt::format("## Reference implementation (the baseline to beat)\n```{}\n{}\n```\n", lang,
                       body);
  };
  reference = render_reference(ref_src.size());

  std::vector<std::string> feedback;
  feedback.reserve(in.history.size());
  for (const auto& f : in.history) feedback.push_back(fmt::format("### {}\n{}\n", f.title, f.body));

  Prompt out;
  const int64_t budget = in.context_tokens > 0 ? in.context_tokens : INT64_MAX;
  auto total = [&](size_t first_feedback) {
    size_t bytes = system_fixed.size() + principles.size() + host_note.size() + hardware.size() +
                   problem.size() + reference.size() + current.size() + task.size() + 200;
    for (size_t i = first_feedback; i < feedback.size(); ++i) bytes += feedback[i].size();
    return static_cast<int64_t>((bytes + 3) / 4);
  };

  size_t first = 0;
  while (first < feedback.size() && total(first) > budget) ++first;
  if (total(first) > budget) {
    principles = std::string(kPrinciplesShort);
    out.principles_shortened = true;
  }
  if (total(first) > budget && !ref_src.empty()) {
    const int64_t over_bytes = (total(first) - budget) * 4;
    const int64_t keep = static_cast<int64_t>(ref_src.size()) - over_bytes - 200;
    reference = render_reference(static_cast<size_t>(std::max<int64_t>(0, keep)));
    out.reference_trimmed = true;
  }
  out.feedback_dropped = static_cast<int32_t>(first);
  out.feedback_included = static_cast<int32_t>(feedback.size() - first);

  std::string system = system_fixed + "\n" + principles + host_note;
  std::string user = hardware + "\n" + problem + "\n" + reference;
  if (!feedback.empty()) {
    user += "\n## Earlier attempts (oldest first)\n";
    if (first > 0) {
      user += fmt::format("({} older attempts omitted to fit the context.)\n", first);
    }
    for (size_t i = first; i < feedback.size(); ++i) user += feedback[i];
  }
  user += "\n" + current + "\n" + task;
  out.messages = {{"system", std::move(system)}, {"user", std::move(user)}};
  out.estimated_tokens =
      EstimateTokens(out.messages[0].content) + EstimateTokens(out.messages[1].content);
  out.over_budget = out.estimated_tokens > budget;
  return out;
}

}  // namespace pkforge::agent

#include "agent/kernel_templates.h"

#include <cctype>
#include <map>
#include <utility>

#include "agent/kernel_templates_text.h"
#include "common/status.h"
#include "fmt/format.h"

namespace pkforge::agent {
namespace {

// The template files (agent/templates/, embedded at build time). Every name
// asked for is one of PKFORGE_KERNEL_TEMPLATES in agent/CMakeLists.txt.
std::string_view TemplateFile(std::string_view name) {
  for (const KernelTemplateFile& f : kKernelTemplateFiles) {
    if (f.name == name) return f.text;
  }
  return {};
}

// "<problem>/<algorithm>" -> body of Run<D>(), from <backend>/<problem>/<algorithm>.<ext>.
std::map<std::string, std::string> BodiesOf(std::string_view backend_dir, std::string_view ext) {
  std::map<std::string, std::string> bodies;
  const std::string prefix = std::string(backend_dir) + "/";
  for (const KernelTemplateFile& f : kKernelTemplateFiles) {
    if (f.name.substr(0, prefix.size()) != prefix || f.name.size() <= prefix.size() + ext.size() ||
        f.name.substr(f.name.size() - ext.size()) != ext) {
      continue;
    }
    const std::string_view key =
        f.name.substr(prefix.size(), f.name.size() - prefix.size() - ext.size());
    bodies.emplace(std::string(key), std::string(f.text));
  }
  return bodies;
}

const std::map<std::string, std::string>& CudaBodies() {
  static const auto* bodies = new std::map<std::string, std::string>(BodiesOf("cuda", ".cu"));
  return *bodies;
}

const std::map<std::string, std::string>& HostBodies() {
  static const auto* bodies = new std::map<std::string, std::string>(BodiesOf("host", ".cc"));
  return *bodies;
}

std::string Subst(std::string_view tmpl,
                  const std::vector<std::pair<std::string, std::string>>& kv) {
  std::string out(tmpl);
  for (const auto& [key, value] : kv) {
    for (size_t pos = out.find(key); pos != std::string::npos;
         pos = out.find(key, pos + value.size())) {
      out.replace(pos, key.size(), value);
    }
  }
  return out;
}

std::string Bytes(int64_t b) {
  if (b >= (1 << 20) && b % (1 << 20) == 0) return fmt::format("{}MiB", b >> 20);
  if (b >= (1 << 10) && b % (1 << 10) == 0) return fmt::format("{}KiB", b >> 10);
  return fmt::format("{}B", b);
}

bool UsesVectorKnobs(const std::string& algorithm) { return algorithm != "copy_engine"; }

}  // namespace

std::string KernelParams::Describe(v1::Backend backend) const {
  if (backend == v1::BACKEND_HOST) {
    return fmt::format("{} chunk={} tile={}", algorithm, Bytes(chunk_bytes), tile);
  }
  std::string blocks_text = blocks > 0 ? std::to_string(blocks) : "all";
  if (!UsesVectorKnobs(algorithm)) {
    return fmt::format("{} threads={} blocks={} chunk={}", algorithm, threads, blocks_text,
                       Bytes(chunk_bytes));
  }
  return fmt::format("{} vec={} threads={} blocks={} chunk={}", algorithm, vec_bytes, threads,
                     blocks_text, Bytes(chunk_bytes));
}

std::vector<KernelParams> SearchSpace(std::string_view problem, v1::Backend backend) {
  std::vector<KernelParams> space;
  const std::string p(problem);
  if (p != "allreduce" && p != "allgather" && p != "reducescatter") return space;
  if (backend == v1::BACKEND_HOST) {
    std::vector<std::string> algos = p == "allreduce"
                                         ? std::vector<std::string>{"one_shot", "two_shot"}
                                     : p == "allgather" ? std::vector<std::string>{"pull", "push"}
                                                        : std::vector<std::string>{"pull", "push"};
    const bool reduces = p != "allgather";
    for (const auto& a : algos) {
      for (int64_t chunk : {16 << 10, 64 << 10, 256 << 10, 1 << 20}) {
        for (int tile : reduces ? std::vector<int>{256, 2048} : std::vector<int>{1024}) {
          KernelParams k;
          k.algorithm = a;
          k.chunk_bytes = chunk;
          k.tile = tile;
          space.push_back(k);
        }
      }
    }
    return space;
  }
  if (backend != v1::BACKEND_CUDA) return space;
  std::vector<std::string> algos =
      p == "allreduce" ? std::vector<std::string>{"one_shot_pull", "one_shot_push", "two_shot"}
                       : std::vector<std::string>{"pull_ld", "push_st"};
  for (const auto& a : algos) {
    for (int vec : {16, 4}) {
      for (int threads : {512, 256}) {
        for (int blocks : {32, 8, 0}) {
          for (int64_t chunk : {8 << 20, 1 << 20}) {
            KernelParams k;
            k.algorithm = a;
            k.vec_bytes = vec;
            k.threads = threads;
            k.blocks = blocks;
            k.chunk_bytes = chunk;
            space.push_back(k);
          }
        }
      }
    }
  }
  // The copy engine moves the data without SMs; threads/blocks only shape the
  // local reduce (none for allgather).
  const bool reduces = p != "allgather";
  for (int blocks : reduces ? std::vector<int>{32, 8, 0} : std::vector<int>{0}) {
    for (int64_t chunk :
         {int64_t{1} << 20, int64_t{8} << 20, int64_t{32} << 20, int64_t{128} << 20}) {
      KernelParams k;
      k.algorithm = "copy_engine";
      k.vec_bytes = 16;
      k.threads = 512;
      k.blocks = blocks;
      k.chunk_bytes = chunk;
      space.push_back(k);
    }
  }
  return space;
}

absl::StatusOr<std::string> GenerateKernel(std::string_view problem, v1::Backend backend,
                                           const KernelParams& params,
                                           const GenerateOptions& options) {
  const std::string key = std::string(problem) + "/" + params.algorithm;
  if (backend != v1::BACKEND_HOST && backend != v1::BACKEND_CUDA) {
    return absl::InvalidArgumentError("search templates: backend must be host or cuda");
  }
  const auto& bodies = backend == v1::BACKEND_HOST ? HostBodies() : CudaBodies();
  auto it = bodies.find(key);
  if (it == bodies.end()) {
    return absl::InvalidArgumentError(
        AsAbsl(fmt::format("search templates: no {} template for {}",
                           backend == v1::BACKEND_HOST ? "host" : "cuda", key)));
  }
  if (params.chunk_bytes <= 0 || params.tile <= 0 || params.threads <= 0 || params.threads > 1024 ||
      (params.threads % 32) != 0 || params.blocks < 0 ||
      (params.vec_bytes != 4 && params.vec_bytes != 8 && params.vec_bytes != 16)) {
    return absl::InvalidArgumentError(
        AsAbsl("search templates: bad parameters " + params.Describe(backend)));
  }
  for (char c : options.symbol_suffix) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) {
      return absl::InvalidArgumentError("search templates: symbol_suffix must be [A-Za-z0-9_]");
    }
  }
  // World size 1 (cuda): the copy engine variants copy with cudaMemcpyAsync,
  // the others with the vectorized copy kernel and their own knobs.
  const std::string solo =
      params.algorithm == "copy_engine"
          ? "    return cudaMemcpyAsync(yv, xv, nin * es, cudaMemcpyDefault, st) == cudaSuccess\n"
            "               ? kOk\n"
            "               : kCuda;\n"
          : "    Segs segs;\n"
            "    segs.src[0] = xv;\n"
            "    segs.dst[0] = yv;\n"
            "    segs.bytes[0] = nin * es;\n"
            "    return LaunchCopy(segs, 1, nin * es, kVecBytes, kThreads, kBlocks,\n"
            "                      ctx->num_sms, st);\n";
  const std::vector<std::pair<std::string, std::string>> kv = {
      {"@BODY@", it->second},
      {"@SOLO@", solo},
      {"@SUFFIX@", options.symbol_suffix},
      {"@DESCRIBE@", fmt::format("{}: {}", problem, params.Describe(backend))},
      {"@VEC@", std::to_string(params.vec_bytes)},
      {"@THREADS@", std::to_string(params.threads)},
      {"@BLOCKS@", std::to_string(params.blocks)},
      {"@CHUNK@", std::to_string(params.chunk_bytes)},
      {"@TILE@", std::to_string(params.tile)},
  };
  if (backend == v1::BACKEND_HOST) {
    return std::string(TemplateFile("host_prelude.h")) + Subst(TemplateFile("host_variant.cc"), kv);
  }
  return std::string(TemplateFile("cuda_prelude.cuh")) + Subst(TemplateFile("cuda_variant.cu"), kv);
}

}  // namespace pkforge::agent

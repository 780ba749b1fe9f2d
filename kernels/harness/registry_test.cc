#include <cmath>
#include <cstdint>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/harness/problem.h"
#include "kernels/harness/problem_info.h"
#include "kernels/harness/protocol.h"
#include "kernels/harness/rng.h"
#include "kernels/problems/common/host_math.h"

namespace pkforge::kernels {
namespace {

TEST(Registry, EveryProblemResolvesTinyAtEveryWorldSize) {
  std::set<std::string_view> names;
  for (const Problem* p : Problems()) {
    names.insert(p->name);
    EXPECT_FALSE(ProblemPrompt(p->name).empty()) << p->name;
    EXPECT_FALSE(ProblemReferenceSource(p->name).empty()) << p->name;
    for (int w : {1, 2, 3, 4, 8}) {
      auto d = ResolveSize(*p, "tiny", w);
      ASSERT_TRUE(d.ok()) << p->name << " w=" << w << ": " << d.status();
      if (w != 3) {  // 8192 % 3 != 0
        EXPECT_TRUE(ResolveSize(*p, "default", w).ok()) << p->name;
      }
      const RankSpec s = p->spec(*d, w, w - 1);
      EXPECT_LE(s.out.size(), 8u);  // the ABI passes up to 8 tensors each way
      const Cost c = p->cost(*d, w, 2);
      EXPECT_GT(c.hbm_bytes, 0) << p->name;
    }
  }
  EXPECT_EQ(names.size(), Problems().size());  // no duplicate names
  EXPECT_FALSE(FindProblem("nope").ok());
}

// The reference source served to agents is the code to beat: a problem whose
// host reference is another problem's (allgather_gemm_at includes
// allgather_gemm's) is served with that code in place of the include.
TEST(Registry, EveryServedReferenceHasItsCode) {
  for (const Problem* p : Problems()) {
    const std::string_view src = ProblemReferenceSource(p->name);
    EXPECT_NE(src.find("pkf_run("), std::string_view::npos) << p->name;
    EXPECT_EQ(src.find("/reference_host.cc\""), std::string_view::npos) << p->name;
  }
  const std::string_view at = ProblemReferenceSource("allgather_gemm_at");
  EXPECT_NE(at.find("s += pkf_load(peer[j][0]"), std::string_view::npos) << at;
}

// The host references are compiled like host candidates, functions and
// loops at 64-byte boundaries (kernels/CMakeLists.txt
// PKFORGE_HOST_KERNEL_FLAGS): a reference whose loop straddled a line after
// an unrelated change in the worker ran 1.5x slower, and every host speedup
// with it.
TEST(Registry, HostReferencesAreAlignedSoTheirSpeedDoesNotFollowTheLinker) {
  for (const Problem* p : Problems()) {
    ASSERT_NE(p->host_reference, nullptr) << p->name;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p->host_reference) % 64, 0u) << p->name;
  }
}

// allgather_gemm and allgather_gemm_at share one spec (common/allgather_gemm_spec.h)
// and differ in B: replicated (PKB 12) or each rank's own (PKB 11).
TEST(Registry, AllgatherGemmVariantsDifferOnlyInWhetherBIsReplicated) {
  auto plain = FindProblem("allgather_gemm");
  auto at = FindProblem("allgather_gemm_at");
  ASSERT_TRUE(plain.ok() && at.ok());
  const Dims d = {{"M", 8}, {"N", 16}, {"K", 48}};
  const RankSpec a = (*plain)->spec(d, 4, 1), b = (*at)->spec(d, 4, 1);
  ASSERT_EQ(a.in.size(), 2u);
  ASSERT_EQ(b.in.size(), 2u);
  EXPECT_EQ(a.in[0].shape, (std::vector<int64_t>{8, 12}));
  EXPECT_EQ(a.in[1].shape, b.in[1].shape);
  EXPECT_TRUE(a.in[1].replicated);
  EXPECT_FALSE(b.in[1].replicated);
  EXPECT_FALSE(b.in[0].replicated);
}

// kernels/problems/problems.list, names in order, comments and blanks skipped.
std::vector<std::string> ListedProblems() {
  std::ifstream in(std::string(PKF_SOURCE_DIR) + "/kernels/problems/problems.list");
  std::vector<std::string> names;
  std::string line;
  while (std::getline(in, line)) {
    line.erase(0, line.find_first_not_of(" \t"));
    line.erase(line.find_last_not_of(" \t\r") + 1);
    if (!line.empty() && line[0] != '#') names.push_back(line);
  }
  return names;
}

// The registry is generated from problems.list: same names, same order, and
// each problem's Problem value says the name of its own folder.
TEST(Registry, IsExactlyTheProblemList) {
  const std::vector<std::string> listed = ListedProblems();
  ASSERT_FALSE(listed.empty());
  ASSERT_EQ(listed.size(), Problems().size());
  for (size_t i = 0; i < listed.size(); ++i) EXPECT_EQ(Problems()[i]->name, listed[i]);
}

// The problem table in kernels/README.md (between the two markers) is the
// registry's (`pkforge-worker list --markdown` regenerates it).
TEST(Registry, ReadmeProblemTableIsCurrent) {
  std::ifstream in(std::string(PKF_SOURCE_DIR) + "/kernels/README.md");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string readme = ss.str();
  const std::string begin = "<!-- problem-table:begin (pkforge-worker list --markdown) -->\n";
  const std::string end = "<!-- problem-table:end -->";
  const size_t b = readme.find(begin), e = readme.find(end);
  ASSERT_NE(b, std::string::npos) << "kernels/README.md has no problem table marker";
  ASSERT_NE(e, std::string::npos);
  ASSERT_LT(b, e);
  EXPECT_EQ(readme.substr(b + begin.size(), e - b - begin.size()), ProblemTableMarkdown())
      << "kernels/README.md's problem table is stale: replace it with the output of "
         "`pkforge-worker list --markdown`";
}

TEST(Registry, ExplicitDimsOverrideAndValidate) {
  const Problem* p = *FindProblem("allgather_gemm");
  auto d = ResolveSize(*p, "M=4,N=8,K=16", 4);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->at("K"), 16);
  EXPECT_EQ(d->at("M"), 4);
  EXPECT_FALSE(ResolveSize(*p, "K=15", 4).ok());     // not divisible
  // gemm_allreduce's K is per rank (ParallelKernelBench): any K at any world.
  EXPECT_TRUE(ResolveSize(**FindProblem("gemm_allreduce"), "K=15", 4).ok());
  EXPECT_FALSE(ResolveSize(*p, "Q=3", 4).ok());      // unknown dim
  EXPECT_FALSE(ResolveSize(*p, "tiny", 9).ok());     // world out of range
}

TEST(Registry, DefaultsFollowParallelKernelBenchAndLargeIsBigger) {
  // ParallelKernelBench: 1024 x 1024 per rank for every problem, K = 512 for
  // the GEMMs, at every world size (utils/input_output_tensors.py).
  for (const Problem* p : Problems()) {
    for (int w : {1, 2, 4, 8}) {
      auto def = ResolveSize(*p, "default", w);
      ASSERT_TRUE(def.ok()) << p->name << " w=" << w << ": " << def.status();
      // Problems sized by other PKB parameters (channels, latent height) have no M.
      if (def->count("M")) {
        EXPECT_EQ(def->at("M"), 1024) << p->name;
      }
      for (const char* dim : {"N", "HL"}) {
        if (def->count(dim)) {
          EXPECT_EQ(def->at(dim), 1024) << p->name << " " << dim;
        }
      }
      if (def->count("K")) {
        EXPECT_EQ(def->at("K"), 512) << p->name;
      }
      auto large = ResolveSize(*p, "large", w);
      ASSERT_TRUE(large.ok()) << p->name << " w=" << w << ": " << large.status();
      ASSERT_FALSE(p->large.empty()) << p->name;
      EXPECT_EQ(*large, p->large) << p->name;
      EXPECT_GE(p->cost(*large, w, 2).hbm_bytes, 8 * p->cost(*def, w, 2).hbm_bytes) << p->name;
    }
  }
  EXPECT_TRUE(IsSizePreset("large"));
  EXPECT_FALSE(IsSizePreset("huge"));
  // What the executor and the orchestrator accept over gRPC.
  const Problem& ar = **FindProblem("allreduce");
  v1::SizeSpec size;
  size.set_preset("large");
  EXPECT_EQ(*SizeSpecToString(ar, size), "large");
  size.set_preset("huge");
  EXPECT_FALSE(SizeSpecToString(ar, size).ok());
  v1::ListProblemsRequest req;
  auto info = DescribeProblem(ar, req);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->size_presets_size(), 3);
}

TEST(HostMath, RoundsToNearestEvenLikeCuda) {
  EXPECT_EQ(pkf_f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(pkf_f32_to_bf16(pkf_bits_f32(0x3f808000u)), 0x3f80);  // tie -> even
  EXPECT_EQ(pkf_f32_to_bf16(pkf_bits_f32(0x3f818000u)), 0x3f82);  // tie -> even (up)
  EXPECT_EQ(pkf_f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(pkf_f32_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(pkf_f32_to_f16(65520.0f), 0x7c00);  // rounds to inf
  EXPECT_EQ(pkf_f32_to_f16(5.9604645e-8f), 0x0001);  // smallest subnormal
  EXPECT_EQ(pkf_f32_to_f16(-2.0f), 0xc000);
  for (uint32_t h = 0; h < 0x7c00; ++h)  // every finite positive half round-trips
    ASSERT_EQ(pkf_f32_to_f16(pkf_f16_to_f32(static_cast<uint16_t>(h))), h);
}

TEST(Rng, DeterministicUniformAndKeyed) {
  const uint64_t k1 = StreamKey(42, 0, 0), k2 = StreamKey(42, 1, 0), k3 = StreamKey(43, 0, 0);
  EXPECT_EQ(GenValue(k1, 7), GenValue(k1, 7));
  EXPECT_NE(GenValue(k1, 7), GenValue(k2, 7));
  EXPECT_NE(GenValue(k1, 7), GenValue(k3, 7));
  double sum = 0;
  for (int i = 0; i < 10000; ++i) {
    const float v = GenValue(k1, i);
    ASSERT_GE(v, -1.0f);
    ASSERT_LT(v, 1.0f);
    sum += v;
  }
  EXPECT_NEAR(sum / 10000, 0.0, 0.05);
}

TEST(Layout, TensorsDoNotOverlapAndPoisonIsNaN) {
  const Problem* p = *FindProblem("scatter");
  Dims d = *ResolveSize(*p, "tiny", 3);
  DataLayout l = MakeLayout(*p, d, 3, PKF_BF16, 4);
  EXPECT_EQ(l.in[0].size(), 1u);
  EXPECT_EQ(l.in[1].size(), 0u);  // only the root has an input
  int64_t end = 0;
  for (int r = 0; r < 3; ++r)
    for (const auto* v : {&l.in[r], &l.out[r]})
      for (const Placed& t : *v) {
        EXPECT_GE(t.offset, end);
        end = t.offset + t.bytes;
      }
  EXPECT_LE(end, l.slot_bytes);
  EXPECT_TRUE(std::isnan(pkf_bf16_to_f32(static_cast<uint16_t>(PoisonBits(PKF_BF16)))));
  EXPECT_TRUE(std::isnan(pkf_f16_to_f32(static_cast<uint16_t>(PoisonBits(PKF_F16)))));
  EXPECT_TRUE(std::isnan(pkf_bits_f32(PoisonBits(PKF_F32))));
}

}  // namespace
}  // namespace pkforge::kernels

namespace pkforge::kernels {
namespace {

TEST(ProblemInfo, AnUnknownDtypeValueIsNamedByItsNumber) {
  auto p = FindProblem("allreduce");
  ASSERT_TRUE(p.ok());
  auto d = FromProtoDtype(**p, static_cast<pkforge::v1::Dtype>(99));
  ASSERT_FALSE(d.ok());
  EXPECT_NE(std::string(d.status().message()).find("unknown value 99"), std::string::npos)
      << d.status();
}

}  // namespace
}  // namespace pkforge::kernels

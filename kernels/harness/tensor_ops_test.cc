// Per-tensor dtypes (issue #17): integer inputs drawn in their range from the
// evaluation's seed, integer outputs compared exactly, poison of every
// element size, the layout sized by each tensor's own dtype.
#include "kernels/harness/tensor_ops.h"

#include <set>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/harness/problem_info.h"
#include "kernels/harness/protocol.h"

namespace pkforge::kernels {
namespace {

TEST(Rng, GenIntIsInRangeDeterministicAndCoversTheRange) {
  const uint64_t k1 = StreamKey(42, 0, 1), k2 = StreamKey(42, 1, 1), k3 = StreamKey(43, 0, 1);
  std::set<int64_t> seen;
  int same_other_rank = 0, same_other_seed = 0;
  for (uint64_t i = 0; i < 2000; ++i) {
    const int64_t v = GenInt(k1, i, 3, 10);
    ASSERT_GE(v, 3);
    ASSERT_LT(v, 10);
    ASSERT_EQ(v, GenInt(k1, i, 3, 10));  // a pure function of (key, index)
    seen.insert(v);
    same_other_rank += v == GenInt(k2, i, 3, 10);
    same_other_seed += v == GenInt(k3, i, 3, 10);
  }
  EXPECT_EQ(seen.size(), 7u);  // every value of [3, 10) occurs
  // Other streams are independent: about 1/7 agree by chance, not all.
  EXPECT_LT(same_other_rank, 600);
  EXPECT_LT(same_other_seed, 600);
  // Wide and negative ranges; an empty range gives lo.
  for (uint64_t i = 0; i < 1000; ++i) {
    const int64_t v = GenInt(k1, i, -(int64_t{1} << 40), int64_t{1} << 40);
    ASSERT_GE(v, -(int64_t{1} << 40));
    ASSERT_LT(v, int64_t{1} << 40);
  }
  EXPECT_EQ(GenInt(k1, 5, 7, 7), 7);
}

Placed Tensor(pkf_dtype dt, int64_t numel, int64_t lo = 0, int64_t hi = 0) {
  Placed p;
  p.dtype = dt;
  p.numel = numel;
  p.bytes = numel * DtypeSize(dt);
  p.desc = IntInput("t", {numel}, dt, lo, hi);
  return p;
}

TEST(TensorOps, IntegerInputsAreDrawnInTheirRangeInTheirDtype) {
  const uint64_t key = StreamKey(7, 2, 0);
  const Placed p64 = Tensor(PKF_I64, 500, 0, 50), p32 = Tensor(PKF_I32, 500, 0, 50);
  std::vector<int64_t> a(500);
  std::vector<int32_t> b(500);
  FillInput(a.data(), p64, key);
  FillInput(b.data(), p32, key);
  std::set<int64_t> seen;
  for (int i = 0; i < 500; ++i) {
    ASSERT_GE(a[i], 0);
    ASSERT_LT(a[i], 50);
    ASSERT_EQ(a[i], b[i]) << i;  // the same values whatever the integer width
    ASSERT_EQ(a[i], GenInt(key, i, 0, 50));
    seen.insert(a[i]);
  }
  EXPECT_GT(seen.size(), 40u);  // random, not a constant or a ramp of few values
}

TEST(TensorOps, IntegersCompareExactlyWhateverTheTolerance) {
  const Placed p = Tensor(PKF_I64, 3);
  const int64_t big = (int64_t{1} << 53) + 1;  // a double cannot tell it from 2^53
  const int64_t expected[3] = {5, big, -7};
  int64_t actual[3] = {5, big - 1, -7};
  CheckRecord c{};
  c.first_index = -1;
  EXPECT_TRUE(CompareOutput(actual, expected, p, Tolerance{10, 10}, &c));
  EXPECT_EQ(c.mismatches, 1);
  EXPECT_EQ(c.first_index, 1);
  EXPECT_EQ(c.elements, 3);
  EXPECT_EQ(c.unwritten, 0);
  actual[1] = big;
  CheckRecord ok{};
  ok.first_index = -1;
  EXPECT_FALSE(CompareOutput(actual, expected, p, Tolerance{0, 0}, &ok));
  EXPECT_EQ(ok.mismatches, 0);
  // i32: off by one fails at any tolerance; the report carries the values.
  const Placed q = Tensor(PKF_I32, 2);
  const int32_t e32[2] = {100, 200};
  const int32_t a32[2] = {100, 201};
  CheckRecord d{};
  d.first_index = -1;
  EXPECT_TRUE(CompareOutput(a32, e32, q, Tolerance{1, 1}, &d));
  EXPECT_EQ(d.first_index, 1);
  EXPECT_EQ(d.expected, 200);
  EXPECT_EQ(d.actual, 201);
  // Floats keep their tolerance.
  const Placed f = Tensor(PKF_F32, 1);
  const float ef = 1.0f, af = 1.0f + 1e-6f;
  CheckRecord g{};
  g.first_index = -1;
  EXPECT_FALSE(CompareOutput(&af, &ef, f, Tolerance{1e-5, 0}, &g));
  EXPECT_TRUE(CompareOutput(&af, &ef, f, Tolerance{0, 0}, &g));
}

TEST(TensorOps, PoisonOfIntegerOutputsIsDetectedAndCounted) {
  for (pkf_dtype dt : {PKF_I32, PKF_I64, PKF_U8, PKF_F32, PKF_BF16, PKF_F16}) {
    const Placed p = Tensor(dt, 4);
    std::vector<unsigned char> buf(static_cast<size_t>(p.bytes)), ref(buf.size(), 0);
    PoisonBuffer(buf.data(), p.numel, dt);
    for (int i = 0; i < 4; ++i) EXPECT_TRUE(IsPoison(buf.data(), dt, i)) << DtypeName(dt);
    EXPECT_EQ(CountNotPoison(buf.data(), p), 0u) << DtypeName(dt);
    std::fill(buf.begin(), buf.begin() + DtypeSize(dt), 0);  // element 0 written
    EXPECT_EQ(CountNotPoison(buf.data(), p), 1u) << DtypeName(dt);
    CheckRecord c{};
    c.first_index = -1;
    EXPECT_TRUE(CompareOutput(buf.data(), ref.data(), p, Tolerance{0, 0}, &c));
    EXPECT_EQ(c.unwritten, 3) << DtypeName(dt);
    EXPECT_EQ(c.first_index, 1) << DtypeName(dt);
  }
  // The integer pattern is not an id: it is negative.
  int64_t v;
  PoisonBuffer(&v, 1, PKF_I64);
  EXPECT_LT(v, 0);
  int32_t w;
  PoisonBuffer(&w, 1, PKF_I32);
  EXPECT_LT(w, 0);
}

// A problem with an i64 input, a float input and an i32 output.
RankSpec MixedSpec(const Dims& d, int, int) {
  return {{IntInput("ids", {d.at("M")}, PKF_I64, 0, 9), {"x", {d.at("M"), 2}}},
          {TypedOutput("counts", {d.at("M")}, PKF_I32)}};
}

TEST(Layout, EachTensorIsSizedByItsOwnDtype) {
  Problem p;
  p.name = "mixed";
  p.spec = MixedSpec;
  const DataLayout l = MakeLayout(p, {{"M", 5}}, 2, PKF_BF16, 1);
  ASSERT_EQ(l.in[1].size(), 2u);
  EXPECT_EQ(l.in[1][0].dtype, PKF_I64);
  EXPECT_EQ(l.in[1][0].bytes, 40);
  EXPECT_EQ(l.in[1][1].dtype, PKF_BF16);  // the evaluation's dtype
  EXPECT_EQ(l.in[1][1].bytes, 20);
  EXPECT_EQ(l.out[1][0].dtype, PKF_I32);
  EXPECT_EQ(l.out[1][0].bytes, 20);
  EXPECT_EQ(l.in[1][0].desc.hi, 9);
}

// What ListProblems (and so the agent's prompt) says about each tensor.
TEST(ProblemInfo, IntegerTensorsCarryTheirOwnDtype) {
  auto p = FindProblem("embedding_lookup");
  ASSERT_TRUE(p.ok()) << p.status();
  v1::ListProblemsRequest req;
  req.set_world_size(2);
  req.set_dtype(v1::DTYPE_BF16);
  auto info = DescribeProblem(**p, req);
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_EQ(info->inputs_size(), 2);
  EXPECT_EQ(info->inputs(0).name(), "indices");
  EXPECT_EQ(info->inputs(0).dtype(), v1::DTYPE_I64);
  EXPECT_EQ(info->inputs(1).dtype(), v1::DTYPE_BF16);
  EXPECT_EQ(info->outputs(0).dtype(), v1::DTYPE_BF16);
  // The index range covers the whole table of the configuration.
  const Dims d = *ResolveSize(**p, "tiny", 3);
  const RankSpec s = (*p)->spec(d, 3, 1);
  EXPECT_EQ(s.in[0].lo, 0);
  EXPECT_EQ(s.in[0].hi, 3 * d.at("M"));
}

// Ranged float inputs (FloatInput): optimizer state that must be positive,
// biases whose sign must not flip. The device kernel (device_ops.cu) calls the
// same GenFloat; what makes the two agree bit for bit is that the value is
// integer arithmetic, an exact conversion to double and one IEEE rounding to
// f32, which is checked here: every value is float(k * 2^-24) for the integer
// k that the formula draws.
TEST(Rng, GenFloatIsInItsRangeDeterministicAndExactOnTheGrid) {
  const uint64_t k1 = StreamKey(42, 0, 3), k2 = StreamKey(42, 1, 3);
  const TensorDesc pos = FloatInput("v", {1}, 0.25, 2.0);
  ASSERT_LT(pos.lo, pos.hi);
  double lo_seen = 9, hi_seen = 0, sum = 0;
  int same_other_rank = 0;
  for (uint64_t i = 0; i < 4000; ++i) {
    const float v = GenFloat(k1, i, pos.lo, pos.hi);
    ASSERT_GE(v, 0.25f);
    ASSERT_LT(v, 2.0f);
    ASSERT_EQ(v, GenFloat(k1, i, pos.lo, pos.hi));  // a pure function of (key, index)
    // On the 2^-24 grid (then rounded to f32): the integer the formula draws.
    const uint64_t h = SplitMix64(k1 + i * 0xd1b54a32d192ed03ull);
    const int64_t fx = pos.lo + static_cast<int64_t>((h >> 1) % static_cast<uint64_t>(pos.hi - pos.lo));
    ASSERT_EQ(v, static_cast<float>(std::ldexp(static_cast<double>(fx), -24))) << i;
    same_other_rank += v == GenFloat(k2, i, pos.lo, pos.hi);
    lo_seen = std::min(lo_seen, static_cast<double>(v));
    hi_seen = std::max(hi_seen, static_cast<double>(v));
    sum += v;
  }
  EXPECT_LT(lo_seen, 0.26);  // covers the range, uniformly (mean ~1.125)
  EXPECT_GT(hi_seen, 1.99);
  EXPECT_NEAR(sum / 4000, 1.125, 0.03);
  EXPECT_LT(same_other_rank, 5);  // other streams are independent
  // The default range is GenValue's [-1, 1), unchanged for every existing problem.
  for (uint64_t i = 0; i < 100; ++i) ASSERT_EQ(GenFloat(k1, i, 0, 0), GenValue(k1, i));
}

TEST(Rng, MirroredFloatRangeHasAGapAroundZeroAndBothSigns) {
  const uint64_t key = StreamKey(9, 2, 1);
  const TensorDesc gap = FloatInput("b", {1}, 4.0, 8.0, /*mirrored=*/true);
  ASSERT_GT(gap.lo, gap.hi);  // the encoding of a mirrored range
  int negative = 0;
  for (uint64_t i = 0; i < 2000; ++i) {
    const float v = GenFloat(key, i, gap.lo, gap.hi);
    ASSERT_GE(std::fabs(v), 4.0f) << i;
    ASSERT_LT(std::fabs(v), 8.0f) << i;
    negative += v < 0;
  }
  EXPECT_GT(negative, 850);
  EXPECT_LT(negative, 1150);
  // Negative, non-mirrored ranges work too.
  const TensorDesc neg = FloatInput("n", {1}, -3.0, -1.0);
  for (uint64_t i = 0; i < 500; ++i) {
    const float v = GenFloat(key, i, neg.lo, neg.hi);
    ASSERT_GE(v, -3.0f);
    ASSERT_LT(v, -1.0f);
  }
}

TEST(TensorOps, RangedFloatInputsAreTheRangeRoundedToTheDtype) {
  const uint64_t key = StreamKey(5, 0, 0);
  Placed p;
  p.numel = 300;
  p.desc = FloatInput("v", {300}, 1e-3, 1e-2);
  for (pkf_dtype dt : {PKF_BF16, PKF_F16, PKF_F32}) {
    p.dtype = dt;
    p.bytes = p.numel * DtypeSize(dt);
    std::vector<unsigned char> buf(p.bytes);
    FillInput(buf.data(), p, key);
    for (int64_t e = 0; e < p.numel; ++e) {
      const float v = pkf_load(buf.data(), dt, e);
      unsigned char one[4];
      pkf_store(one, dt, 0, GenFloat(key, static_cast<uint64_t>(e), p.desc.lo, p.desc.hi));
      ASSERT_EQ(v, pkf_load(one, dt, 0)) << e;
      ASSERT_GE(v, 1e-3f * 0.99f);  // rounding to the dtype stays in the range (to an ulp)
      ASSERT_LE(v, 1e-2f * 1.01f);
    }
  }
}

}  // namespace
}  // namespace pkforge::kernels

#include "kernels/harness/slot_tensors.h"

#include "gtest/gtest.h"

namespace pkforge::kernels {
namespace {

Placed Tensor(int64_t offset, std::vector<int64_t> shape, pkf_dtype dtype) {
  Placed p;
  p.offset = offset;
  p.dtype = dtype;
  p.desc.shape = std::move(shape);
  return p;
}

// Every call of a batch gets its slot's descriptors, ring commands wrap,
// and what a call does to its copy is gone by the next batch.
TEST(SlotTensors, BatchCallsGetTheirSlotsDescriptors) {
  static char base[4 * 1000];
  const std::vector<Placed> in = {Tensor(0, {4, 8}, PKF_F32), Tensor(128, {16}, PKF_BF16)};
  const std::vector<Placed> out = {Tensor(512, {4, 8}, PKF_F32)};
  SlotTensors t;
  t.Build(4, in, out, [&](int slot, const Placed& p) { return base + slot * 1000 + p.offset; });
  ASSERT_EQ(t.n_in(), 2);
  ASSERT_EQ(t.n_out(), 1);

  Cmd cmd{};
  cmd.slot = 2;
  cmd.count = 3;
  cmd.ring = 4;  // slots 2, 3, 0
  t.Prepare(cmd);
  const int slots[] = {2, 3, 0};
  for (uint32_t k = 0; k < 3; ++k) {
    EXPECT_EQ(t.In(k)[0].data, base + slots[k] * 1000);
    EXPECT_EQ(t.In(k)[1].data, base + slots[k] * 1000 + 128);
    EXPECT_EQ(t.Out(k)[0].data, base + slots[k] * 1000 + 512);
    EXPECT_EQ(t.In(k)[0].ndim, 2);
    EXPECT_EQ(t.In(k)[0].shape[1], 8);
    EXPECT_EQ(t.In(k)[1].dtype, PKF_BF16);
    EXPECT_EQ(t.In(k)[1].shape[0], 16);
  }
  t.Out(0)[0].data = nullptr;  // a call that scribbles on its descriptors
  t.PrepareOne(2);
  EXPECT_EQ(t.Out(0)[0].data, base + 2 * 1000 + 512);
}

}  // namespace
}  // namespace pkforge::kernels

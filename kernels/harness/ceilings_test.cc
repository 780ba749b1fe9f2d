#include "kernels/harness/ceilings.h"

#include <gtest/gtest.h>

namespace pkforge::kernels {
namespace {

// The judge's roofline and the probe's "table" ceilings read this one table;
// these are the numbers both printed before they shared it.
TEST(GpuCeilings, DatasheetNumbersByDeviceName) {
  const GpuCeilings& h200 = GpuCeilingsFor("NVIDIA H200");
  EXPECT_EQ(h200.hbm_gbps, 4800);
  EXPECT_EQ(h200.link_gbps, 450);
  EXPECT_EQ(h200.flops(PKF_BF16), 989e12);
  EXPECT_EQ(h200.flops(PKF_F16), 989e12);
  EXPECT_EQ(h200.flops(PKF_F32), 67e12);
  EXPECT_EQ(GpuCeilingsFor("NVIDIA B200").hbm_gbps, 8000);
  EXPECT_EQ(GpuCeilingsFor("NVIDIA A100-SXM4-80GB").flops(PKF_F32), 19.5e12);
  EXPECT_EQ(GpuCeilingsFor("NVIDIA H100 80GB HBM3").hbm_gbps, 3350);
}

TEST(GpuCeilings, UnknownDevicesGetTheH100Numbers) {
  for (const char* name : {"", "Tesla V100", "NVIDIA GeForce RTX 4090"}) {
    const GpuCeilings& c = GpuCeilingsFor(name);
    EXPECT_EQ(&c, &kDefaultGpuCeilings) << name;
    EXPECT_STREQ(c.key, "H100") << name;
  }
}

}  // namespace
}  // namespace pkforge::kernels

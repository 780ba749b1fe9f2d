#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/harness/protocol.h"
#include "kernels/problems/common/host_math.h"

namespace pkforge::kernels {

namespace {
int64_t AlignUp(int64_t v, int64_t a) { return (v + a - 1) / a * a; }
}  // namespace

DataLayout MakeLayout(const Problem& p, const Dims& dims, int world, pkf_dtype dtype, int slots) {
  DataLayout l;
  l.world = world;
  l.slots = slots;
  l.elem_bytes = DtypeSize(dtype);
  l.in.resize(world);
  l.out.resize(world);
  int64_t off = 0;
  for (int r = 0; r < world; ++r) {
    RankSpec s = p.spec(dims, world, r);
    int64_t rank_bytes = 0;
    auto place = [&](const TensorDesc& d, std::vector<Placed>* v) {
      Placed pl;
      pl.desc = d;
      pl.dtype = d.dtype.value_or(dtype);
      pl.numel = 1;
      for (int64_t x : d.shape) pl.numel *= x;
      pl.bytes = pl.numel * DtypeSize(pl.dtype);
      pl.offset = off;
      off = AlignUp(off + pl.bytes, 256);
      rank_bytes += pl.bytes;
      v->push_back(pl);
    };
    for (const auto& d : s.in) place(d, &l.in[r]);
    for (const auto& d : s.out) place(d, &l.out[r]);
    l.max_rank_bytes = std::max(l.max_rank_bytes, rank_bytes);
  }
  l.slot_bytes = AlignUp(off, 4096);
  l.drip_offset = l.slot_bytes * slots;
  l.total_bytes = l.drip_offset + AlignUp(world * kDripWordBytes, 4096);
  return l;
}

uint32_t PoisonBits(pkf_dtype dtype) {
  switch (dtype) {
    case PKF_F32: return 0x7fbadbadu;  // signalling NaN with a payload no arithmetic produces
    case PKF_F16: return 0x7d5au;
    case PKF_BF16: return 0x7fadu;
    default: return 0xa5a5a5a5u;
  }
}

void PoisonBuffer(void* data, int64_t numel, pkf_dtype dtype) {
  const uint32_t bits = PoisonBits(dtype);
  switch (DtypeSize(dtype)) {
    case 4: {
      auto* p = static_cast<uint32_t*>(data);
      for (int64_t i = 0; i < numel; ++i) p[i] = bits;
      return;
    }
    case 2: {
      auto* p = static_cast<uint16_t*>(data);
      for (int64_t i = 0; i < numel; ++i) p[i] = static_cast<uint16_t>(bits);
      return;
    }
    default:  // i64, f64, u8, fp8: the byte 0xa5 everywhere
      std::memset(data, 0xa5, static_cast<size_t>(numel * DtypeSize(dtype)));
  }
}

namespace {
int64_t Bytes(const std::vector<Placed>& v) {
  int64_t b = 0;
  for (const Placed& p : v) b += p.bytes;
  return b;
}
int64_t Packed(const std::vector<Placed>& v) {
  int64_t b = 0;
  for (const Placed& p : v) b += (p.bytes + 255) / 256 * 256;
  return b;
}
}  // namespace

uint32_t CudaDripLength(const DataLayout& l) {
  const char* v = std::getenv("PKFORGE_CUDA_DRIP");
  if (v != nullptr && std::string(v) == "0") return 0;
  uint32_t n = kDripCalls;
  for (size_t r = 0; r < l.in.size(); ++r) n = std::min(n, CudaDripCalls(Bytes(l.in[r]), Bytes(l.out[r])));
  return n;
}

int64_t CudaDripStageBytes(const DataLayout& l) {
  if (CudaDripLength(l) == 0) return 0;
  int64_t most = 0;
  for (size_t r = 0; r < l.in.size(); ++r)
    most = std::max(most, Packed(l.in[r]) + Packed(l.out[r]));
  return (std::max<int64_t>(most, 1) + 4095) / 4096 * 4096;
}

}  // namespace pkforge::kernels

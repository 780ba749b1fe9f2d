#include "kernels/harness/rank.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "fmt/format.h"
#include "kernels/harness/containment.h"
#include "kernels/harness/drip_hand_off.h"
#include "kernels/harness/protocol.h"
#include "kernels/harness/rng.h"
#include "kernels/harness/shm.h"
#include "kernels/harness/tensor_ops.h"
#include "kernels/problems/common/host_math.h"

namespace pkforge::kernels {

bool ReadFull(int fd, void* buf, size_t n) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

void WriteReply(Reply* r) {
  r->magic = kMagic;
  const char* p = reinterpret_cast<const char*>(r);
  size_t n = sizeof(Reply);
  while (n > 0) {
    ssize_t w = write(kFdReply, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) _exit(3);
    p += w;
    n -= static_cast<size_t>(w);
  }
}

namespace {

// The rank's timing state. Deliberately ordinary process memory: the threat
// model assumes a candidate can find and rewrite it (the forged-timing test
// candidate does), which is why the judge's own wall clock is the authority.
volatile int64_t g_t0_ns = 0;

SideControl* g_control = nullptr;
int g_rank = 0;
int g_world = 1;

int HostBarrier(const pkf_context*) {
  // Uses the harness's own rank, not ctx->rank: the context is candidate-writable.
  SideBarrierWait(g_control, g_rank, g_world);
  return 0;
}

uint64_t Fnv1a(const void* data, int64_t bytes, uint64_t h) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (int64_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

class Rank {
 public:
  explicit Rank(const RankOptions& o) : o_(o) {}

  int Main() {
    auto resolved = ResolveRankProblem(o_);
    if (!resolved.ok()) return Fail(std::string(resolved.status().message()));
    problem_ = resolved->problem;
    dtype_ = resolved->dtype;
    dims_ = resolved->dims;
    tol_ = resolved->tol;
    layout_ = MakeLayout(*problem_, dims_, o_.world, dtype_, o_.slots);
    g_rank = o_.rank;
    g_world = o_.world;

    auto ctl = MapSegment(kFdControl, sizeof(SideControl));
    const uint64_t pad_bytes = o_.flag_count * sizeof(uint32_t);
    const uint64_t scratch_total = (o_.scratch_bytes + pad_bytes) * o_.world;
    auto scratch = MapSegment(kFdScratch, scratch_total);
    auto data = MapSegment(kFdData, layout_.total_bytes);
    if (!ctl.ok() || !scratch.ok() || !data.ok()) return Fail("mapping segments failed");
    g_control = static_cast<SideControl*>(*ctl);
    data_ = static_cast<char*>(*data);
    if (o_.role == "ref") {
      auto peer = MapSegment(kFdPeerData, layout_.total_bytes);
      if (!peer.ok()) return Fail("mapping candidate data failed");
      cand_data_ = static_cast<char*>(*peer);
    }
    for (int r = 0; r < o_.world; ++r) {
      char* base = static_cast<char*>(*scratch) + r * o_.scratch_bytes;
      scratch_ptrs_.push_back(base);
      flag_ptrs_.push_back(reinterpret_cast<uint32_t*>(static_cast<char*>(*scratch) +
                                                       o_.world * o_.scratch_bytes +
                                                       r * pad_bytes));
    }
    ctx_.rank = o_.rank;
    ctx_.world_size = o_.world;
    ctx_.device = -1;
    ctx_.num_sms = 0;
    ctx_.nccl = nullptr;
    ctx_.peer_scratch = scratch_ptrs_.data();
    ctx_.scratch_bytes = o_.scratch_bytes;
    ctx_.peer_flags = flag_ptrs_.data();
    ctx_.flag_count = o_.flag_count;
    ctx_.barrier = &HostBarrier;
    ctx_.user_state = nullptr;

    if (o_.role == "ref") {
      // Before any seed arrives: no candidate process may read our memory,
      // descriptors or environment through /proc.
      if (auto st = MakeNonDumpable(); !st.ok()) return Fail(std::string(st.message()));
    } else {
      // Before any candidate code is loaded; the hello is the one reply of
      // this process the judge can trust.
      Reply hello;
      std::memset(&hello, 0, sizeof hello);
      hello.op = kOpHello;
      // The candidate's file is opened now, while it is surely readable; it
      // is loaded later through this descriptor (the rank may have dropped
      // to an unprivileged uid by then).
      cand_fd_ = open(o_.candidate.c_str(), O_RDONLY | O_CLOEXEC);
      if (auto st = HardenCandidateProcess(/*drop_root=*/true, /*confine_writes=*/true,
                                           /*forbid_timers=*/true, /*forbid_processes=*/true,
                                           o_.writable);
          !st.ok()) {
        hello.rc = kRcHarness;
        snprintf(hello.message, sizeof hello.message, "%s", std::string(st.message()).c_str());
      }
      WriteReply(&hello);
      if (hello.rc != 0) return 2;
    }

    Cmd cmd;
    while (ReadFull(kFdCmd, &cmd, sizeof cmd)) {
      if (cmd.magic != kMagic) return 4;
      Reply rep;
      std::memset(&rep, 0, sizeof rep);
      rep.op = cmd.op;
      if (BadSlots(cmd, o_.slots)) {
        rep.rc = -1;
        snprintf(rep.message, sizeof rep.message, "bad command %u (slot %u count %u)", cmd.op,
                 cmd.slot, cmd.count);
        WriteReply(&rep);
        continue;
      }
      switch (cmd.op) {
        case kOpSetup: Setup(&rep); break;
        case kOpGen:
          for (uint32_t k = 0; k < cmd.count; ++k)
            Gen(cmd.SlotAt(k), BatchSeed(cmd.seed, k), (cmd.flags & kGenReferenceOnly) == 0);
          if ((cmd.flags & kGenDrip) != 0 && cand_data_ != nullptr) ArmCandidateDrip(cmd);
          break;
        case kOpDrip:
          if (o_.role == "ref")
            SelfDrip(cmd, &rep);
          else
            DripCalls(cmd, layout_.Drip(data_, o_.rank), &rep);
          break;
        case kOpDripWatch: WatchCandidateDrip(cmd, &rep); break;
        case kOpRun: Run(cmd.slot, &rep); break;
        case kOpBatch: Batch(cmd, &rep); break;
        case kOpCheck: Check(cmd, &rep); break;
        case kOpDigest: rep.value = Digest(cmd.slot); break;
        case kOpSnapshot: Snapshot(cmd); break;
        case kOpSnapCompare: rep.value = SnapCompare(cmd.slot); break;
        case kOpPoisonCheck: rep.value = NotPoison(cmd); break;
        case kOpProgress: rep.value = CallsDone(cmd); break;
        case kOpPoison: PoisonOutputs(cand_data_, cmd.slot); break;
        case kOpSync: break;  // host: pkf_run is synchronous
        case kOpIdle: break;  // host: no device that could stay busy
        case kOpSwitch: break;
        case kOpExit:
          if (teardown_ != nullptr) teardown_(&ctx_);
          WriteReply(&rep);
          fflush(nullptr);
          _exit(0);
        default: rep.rc = -2;
      }
      WriteReply(&rep);
    }
    return 0;
  }

 private:
  int Fail(const std::string& why) {
    fmt::print(stderr, "rank {} ({}): {}\n", o_.rank, o_.role, why);
    return 2;
  }

  void Setup(Reply* rep) {
    if (o_.role == "ref") {
      run_ = problem_->host_reference;
      // Everything the reference needs later, acquired now, before any
      // candidate code runs: the watcher thread of its drip batches and
      // the memory of its snapshots and drip buffers (committed: touched).
      drip_watcher_ = std::make_unique<ParkedThread>();
      const int64_t ob = OutBytes();
      int64_t ib = 0;
      for (const Placed& p : layout_.in[o_.rank]) ib += p.bytes;
      const int64_t calls = std::min<int64_t>(o_.slots, MaxBatch(ob));
      Commit(&snapshot_, static_cast<size_t>(calls * ob));
      Commit(&golden_, static_cast<size_t>(kDripCalls * ob));
      Commit(&stash_, static_cast<size_t>(kDripCalls * ib));
      return;
    }
    const std::string path =
        cand_fd_ >= 0 ? "/proc/self/fd/" + std::to_string(cand_fd_) : o_.candidate;
    auto loaded = LoadCandidate(path);
    if (!loaded.ok()) {
      rep->rc = -1;
      snprintf(rep->message, sizeof rep->message, "%s", std::string(loaded.status().message()).c_str());
      return;
    }
    run_ = loaded->run;
    auto setup = loaded->setup;
    teardown_ = loaded->teardown;
    if (setup != nullptr) {
      g_control->in_run[o_.rank].store(1);
      rep->rc = setup(&ctx_);
      g_control->in_run[o_.rank].store(0);
      if (rep->rc != 0) snprintf(rep->message, sizeof rep->message, "pkf_setup returned %d", rep->rc);
    }
  }

  void Tensors(char* base, int slot, std::vector<pkf_tensor>* in, std::vector<pkf_tensor>* out) {
    auto fill = [&](const std::vector<Placed>& v, std::vector<pkf_tensor>* t) {
      for (const Placed& p : v)
        t->push_back(DescribeTensor(p, base + layout_.SlotBase(slot) + p.offset));
    };
    fill(layout_.in[o_.rank], in);
    fill(layout_.out[o_.rank], out);
  }

  void Run(int slot, Reply* rep) {
    std::vector<pkf_tensor> in, out;
    Tensors(data_, slot, &in, &out);
    SideBarrierWait(g_control, o_.rank, o_.world);
    g_control->in_run[o_.rank].store(1);
    g_t0_ns = MonotonicNs();
    rep->rc = run_(&ctx_, in.data(), static_cast<int32_t>(in.size()), out.data(),
                   static_cast<int32_t>(out.size()), nullptr);
    rep->t1_ns = MonotonicNs();
    rep->t0_ns = g_t0_ns;
    g_control->in_run[o_.rank].store(0);
    if (rep->rc != 0) snprintf(rep->message, sizeof rep->message, "pkf_run returned %d", rep->rc);
  }

  // Back-to-back calls; the judge times the whole batch with its own clock.
  // t0/t1 are this process's view (a candidate can rewrite them: cross-check
  // only).
  void Batch(const Cmd& cmd, Reply* rep) {
    std::vector<std::vector<pkf_tensor>> ins(cmd.count), outs(cmd.count);
    for (uint32_t k = 0; k < cmd.count; ++k) Tensors(data_, cmd.SlotAt(k), &ins[k], &outs[k]);
    // One barrier at the batch's start, none between its calls: harness work
    // inside a candidate process is the candidate's to patch out or forge
    // (red team: patch_harness_barrier, barrier_state_forge), so the judge
    // must not time any that the reference pays for. The calls' own
    // synchronization orders them (candidate.h).
    SideBarrierWait(g_control, o_.rank, o_.world);
    for (uint32_t k = 0; k < cmd.count; ++k) {
      if (k == 0) g_t0_ns = MonotonicNs();
      g_control->in_run[o_.rank].store(1);
      rep->rc = run_(&ctx_, ins[k].data(), static_cast<int32_t>(ins[k].size()), outs[k].data(),
                     static_cast<int32_t>(outs[k].size()), nullptr);
      g_control->in_run[o_.rank].store(0);
      if (rep->rc != 0) {
        snprintf(rep->message, sizeof rep->message, "pkf_run returned %d (call %u of the batch)",
                 rep->rc, k);
        return;
      }
    }
    rep->t1_ns = MonotonicNs();
    rep->t0_ns = g_t0_ns;
  }

  // Drip batches (protocol.h kOpDrip). The calls, on this rank's own
  // buffers: call k starts once the word says its inputs are in place.
  // Harness code in a candidate process: a candidate can patch it, which
  // only withholds its own inputs or gets its own calls verified early.
  void DripCalls(const Cmd& cmd, DripWord* w, Reply* rep) {
    std::vector<std::vector<pkf_tensor>> ins(cmd.count), outs(cmd.count);
    for (uint32_t k = 0; k < cmd.count; ++k) Tensors(data_, cmd.SlotAt(k), &ins[k], &outs[k]);
    SideBarrierWait(g_control, o_.rank, o_.world);
    RunDripCalls(cmd.count, w, [&](uint32_t k) {
      g_control->in_run[o_.rank].store(1);
      const int rc = run_(&ctx_, ins[k].data(), static_cast<int32_t>(ins[k].size()),
                          outs[k].data(), static_cast<int32_t>(outs[k].size()), nullptr);
      g_control->in_run[o_.rank].store(0);
      return rc;
    }, rep);
  }

  // The decoys of a drip batch: every call's inputs but the first
  // kDripLead, on the candidate's side, are other generated values until
  // released.
  void WriteDecoys(const Cmd& cmd, char* base) {
    const auto& ins = layout_.in[o_.rank];
    for (uint32_t k = kDripLead; k < cmd.count; ++k)
      for (size_t i = 0; i < ins.size(); ++i) {
        const Placed& p = ins[i];
        const uint64_t key = InputKey(DecoySeed(cmd.seed, k), p, o_.rank, i);
        FillInput(base + layout_.SlotBase(static_cast<int>(cmd.SlotAt(k))) + p.offset, p, key);
      }
  }

  void ArmCandidateDrip(const Cmd& cmd) {
    WriteDecoys(cmd, cand_data_);
    ArmDrip(layout_.Drip(cand_data_, o_.rank));
  }

  // True when the live outputs of `slot` at `live_base` match the expected
  // ones: packed at `golden`, or (golden null) the same slot at
  // `expected_base`. Both watchers compare the same bytes: their cost is
  // part of the hand-off the reference's drip measures for the candidate's.
  bool OutputsMatch(const char* live_base, int slot, const char* golden,
                    const char* expected_base = nullptr) {
    for (const Placed& p : layout_.out[o_.rank]) {
      CheckRecord c{};
      c.first_index = -1;
      const char* expected =
          golden != nullptr ? golden : expected_base + layout_.SlotBase(slot) + p.offset;
      if (CompareOutput(live_base + layout_.SlotBase(slot) + p.offset, expected, p, tol_, &c))
        return false;
      if (golden != nullptr) golden += p.bytes;
    }
    return true;
  }

  // The reference's own drip batch, the baseline of batch_drip: the same
  // hand-offs (a watcher thread of this process, on this process's CPU as
  // the candidate's watcher shares its rank's), verified against the
  // outputs the batch's slots hold (the reference's, computed just before).
  void SelfDrip(const Cmd& cmd, Reply* rep) {
    if (drip_watcher_ == nullptr) {
      rep->rc = kRcHarness;
      snprintf(rep->message, sizeof rep->message, "drip batch before the reference's setup");
      return;
    }
    const int64_t ob = OutBytes();
    const auto& ins = layout_.in[o_.rank];
    Pack(data_, cmd, layout_.out[o_.rank], 0, &golden_);
    Pack(data_, cmd, ins, kDripLead, &stash_);
    for (uint32_t k = 0; k < cmd.count; ++k) PoisonOutputs(data_, static_cast<int>(cmd.SlotAt(k)));
    WriteDecoys(cmd, data_);
    DripWord* w = layout_.Drip(data_, o_.rank);
    ArmDrip(w);
    int64_t in_bytes = 0;
    for (const Placed& p : ins) in_bytes += p.bytes;
    RunSelfDrip(
        drip_watcher_.get(),
        [&] {
          return WatchDrip(
              w, cmd.count, static_cast<int64_t>(cmd.seed), nullptr,
              [&](uint32_t k) {
                return OutputsMatch(data_, static_cast<int>(cmd.SlotAt(k)),
                                    golden_.data() + static_cast<size_t>(ob) * k);
              },
              [&](uint32_t k) {
                char* slot = data_ + layout_.SlotBase(static_cast<int>(cmd.SlotAt(k)));
                const char* src = stash_.data() + static_cast<size_t>(in_bytes) * (k - kDripLead);
                for (const Placed& p : ins) {
                  std::memcpy(slot + p.offset, src, static_cast<size_t>(p.bytes));
                  src += p.bytes;
                }
              });
        },
        [&](Reply* calls) { DripCalls(cmd, w, calls); }, rep);
  }

  // The candidate's drip batch, watched: its live outputs are compared with
  // the reference's (this rank's slots, computed just before) at each
  // return, and the next call's inputs copied in from the reference's.
  void WatchCandidateDrip(const Cmd& cmd, Reply* rep) {
    DripWord* w = layout_.Drip(cand_data_, o_.rank);
    const DripWatch d = WatchDrip(
        w, cmd.count, static_cast<int64_t>(cmd.seed), &g_control->drip_stop,
        [&](uint32_t k) {
          return OutputsMatch(cand_data_, static_cast<int>(cmd.SlotAt(k)), nullptr, data_);
        },
        [&](uint32_t k) {
          const int64_t base = layout_.SlotBase(static_cast<int>(cmd.SlotAt(k)));
          for (const Placed& p : layout_.in[o_.rank])
            std::memcpy(cand_data_ + base + p.offset, data_ + base + p.offset,
                        static_cast<size_t>(p.bytes));
        });
    FillDripReply(d, rep);
  }

  void PoisonOutputs(char* base, int slot) {
    for (const Placed& p : layout_.out[o_.rank])
      PoisonBuffer(base + layout_.SlotBase(slot) + p.offset, p.numel, p.dtype);
  }

  void Gen(int slot, uint64_t seed, bool candidate_too) {
    const auto& ins = layout_.in[o_.rank];
    for (size_t i = 0; i < ins.size(); ++i) {
      const Placed& p = ins[i];
      const uint64_t key = InputKey(seed, p, o_.rank, i);
      char* dst = data_ + layout_.SlotBase(slot) + p.offset;
      FillInput(dst, p, key);  // the tensor's own dtype (integer ids: its range)
      if (candidate_too) std::memcpy(cand_data_ + layout_.SlotBase(slot) + p.offset, dst, p.bytes);
    }
    PoisonOutputs(data_, slot);
    if (candidate_too) PoisonOutputs(cand_data_, slot);
  }

  // Compares snapshot k (the candidate's outputs as they were right after
  // its call) with the reference outputs of the batch's k-th slot, and the
  // candidate's live inputs with the generated ones; records accumulate over
  // the batch, value = index of the first call with a mismatch.
  void Check(const Cmd& cmd, Reply* rep) {
    const auto& outs = layout_.out[o_.rank];
    rep->n_checks = static_cast<uint32_t>(std::min<size_t>(outs.size(), kMaxOutputs));
    for (uint32_t o = 0; o < rep->n_checks; ++o) rep->checks[o].first_index = -1;
    rep->value = UINT64_MAX;
    for (uint32_t k = 0; k < cmd.count; ++k) {
      const int64_t base = layout_.SlotBase(static_cast<int>(cmd.SlotAt(k)));
      for (const Placed& p : layout_.in[o_.rank]) {
        const auto* a = reinterpret_cast<const unsigned char*>(cand_data_ + base + p.offset);
        const auto* b = reinterpret_cast<const unsigned char*>(data_ + base + p.offset);
        for (int64_t i = 0; i < p.bytes; ++i) rep->input_diff += a[i] != b[i];
      }
      const char* snap = SnapshotAt(k);
      for (uint32_t o = 0; o < rep->n_checks; ++o) {
        const Placed& p = outs[o];
        const char* actual = snap;
        snap += p.bytes;
        if (actual == nullptr) continue;
        const char* expected = data_ + base + p.offset;
        if (CompareOutput(actual, expected, p, tol_, &rep->checks[o]) && rep->value == UINT64_MAX)
          rep->value = k;
      }
    }
  }

  // Output elements of the batch's candidate slots that are not poison.
  uint64_t NotPoison(const Cmd& cmd) {
    uint64_t n = 0;
    for (uint32_t k = 0; k < cmd.count; ++k)
      for (const Placed& p : layout_.out[o_.rank])
        n += CountNotPoison(
            cand_data_ + layout_.SlotBase(static_cast<int>(cmd.SlotAt(k))) + p.offset, p);
    return n;
  }

  // Calls of the batch whose live candidate outputs all match the reference's
  // within tolerance (progress probe; the candidate is frozen mid-batch).
  uint64_t CallsDone(const Cmd& cmd) {
    uint64_t done = 0;
    for (uint32_t k = 0; k < cmd.count; ++k) {
      const int64_t base = layout_.SlotBase(static_cast<int>(cmd.SlotAt(k)));
      bool ok = true;
      for (const Placed& p : layout_.out[o_.rank]) {
        CheckRecord c{};
        c.first_index = -1;
        if (CompareOutput(cand_data_ + base + p.offset, data_ + base + p.offset, p, tol_, &c)) {
          ok = false;
          break;
        }
      }
      done += ok ? 1 : 0;
    }
    return done;
  }

  int64_t OutBytes() const {
    int64_t b = 0;
    for (const Placed& p : layout_.out[o_.rank]) b += p.bytes;
    return b;
  }
  const char* SnapshotAt(uint32_t k) const {
    const size_t off = static_cast<size_t>(k) * static_cast<size_t>(OutBytes());
    return off + static_cast<size_t>(OutBytes()) <= snapshot_.size() ? snapshot_.data() + off
                                                                     : nullptr;
  }

  uint64_t Digest(int slot) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (const Placed& p : layout_.out[o_.rank])
      h = Fnv1a(cand_data_ + layout_.SlotBase(slot) + p.offset, p.bytes, h);
    return h;
  }

  // `tensors` of the batch's calls from..count-1 at `base`, packed call
  // after call, into *out (its contents replaced; its capacity, committed in
  // the reference's setup, kept).
  void Pack(const char* base, const Cmd& cmd, const std::vector<Placed>& tensors, uint32_t from,
            std::vector<char>* out) const {
    out->clear();
    for (uint32_t k = from; k < cmd.count; ++k)
      for (const Placed& p : tensors) {
        const char* s = base + layout_.SlotBase(static_cast<int>(cmd.SlotAt(k))) + p.offset;
        out->insert(out->end(), s, s + p.bytes);
      }
  }

  // Sized and touched now (capacity kept through clear()).
  static void Commit(std::vector<char>* v, size_t bytes) {
    v->assign(bytes, 0);
    v->clear();
  }

  void Snapshot(const Cmd& cmd) {
    Pack(cand_data_, cmd, layout_.out[o_.rank], 0, &snapshot_);
  }

  uint64_t SnapCompare(int slot) {
    uint64_t diff = 0;
    size_t k = 0;
    for (const Placed& p : layout_.out[o_.rank]) {
      const char* s = cand_data_ + layout_.SlotBase(slot) + p.offset;
      for (int64_t i = 0; i < p.bytes && k < snapshot_.size(); ++i, ++k) diff += s[i] != snapshot_[k];
    }
    return diff;
  }

  RankOptions o_;
  const Problem* problem_ = nullptr;
  pkf_dtype dtype_ = PKF_F32;
  Dims dims_;
  Tolerance tol_;
  DataLayout layout_;
  char* data_ = nullptr;
  char* cand_data_ = nullptr;
  std::vector<void*> scratch_ptrs_;
  std::vector<uint32_t*> flag_ptrs_;
  pkf_context ctx_{};
  pkf_run_fn run_ = nullptr;
  pkf_teardown_fn teardown_ = nullptr;
  std::vector<char> snapshot_;
  std::vector<char> golden_, stash_;  // the reference's own drip batch (SelfDrip)
  std::unique_ptr<ParkedThread> drip_watcher_;
  int cand_fd_ = -1;
};

}  // namespace

absl::StatusOr<RankProblem> ResolveRankProblem(const RankOptions& o) {
  auto problem = FindProblem(o.problem);
  auto dtype = ParseDtype(o.dtype);
  if (!problem.ok() || !dtype.ok()) return absl::InvalidArgumentError("bad problem/dtype");
  RankProblem r;
  r.problem = *problem;
  r.dtype = *dtype;
  auto dims = ResolveSize(*r.problem, o.dims, o.world);
  if (!dims.ok()) return dims.status();
  r.dims = *dims;
  r.tol = r.problem->tolerance(r.dims, o.world, r.dtype);
  return r;
}

absl::StatusOr<CandidateEntryPoints> LoadCandidate(const std::string& path) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) return absl::FailedPreconditionError(std::string("dlopen: ") + dlerror());
  CandidateEntryPoints e;
  e.run = reinterpret_cast<pkf_run_fn>(dlsym(h, "pkf_run"));
  e.setup = reinterpret_cast<pkf_setup_fn>(dlsym(h, "pkf_setup"));
  e.teardown = reinterpret_cast<pkf_teardown_fn>(dlsym(h, "pkf_teardown"));
  if (e.run == nullptr) return absl::FailedPreconditionError("candidate does not export pkf_run");
  return e;
}

int RankMain(const RankOptions& options) {
  Rank r(options);
  return r.Main();
}

}  // namespace pkforge::kernels

  const long long n = nout;
  if (nin != (long long)w * n) return kBadArgs;
  const long long slot = ChunkElems<D>(MinLL(kChunkBytes, (long long)ctx->scratch_bytes / w));
  if (slot <= 0) return kNoScratch;
  for (long long off = 0; off < n; off += slot) {
    const long long m = MinLL(slot, n - off);
    Segs segs;
    for (int d = 0; d < w; ++d) {  // stage every destination's chunk in own scratch
      segs.src[d] = Off(xv, ((long long)d * n + off) * es);
      segs.dst[d] = Off(ctx->peer_scratch[r], (long long)d * slot * es);
      segs.bytes[d] = m * es;
    }
    rc = LaunchCopy(segs, w, m * es, kVecBytes, kThreads, kBlocks, ctx->num_sms, st);
    if (rc != kOk) return rc;
    if ((rc = Barrier(ctx, st)) != kOk) return rc;
    Ptrs src;
    for (int s = 0; s < w; ++s) src.p[s] = Off(ctx->peer_scratch[s], (long long)r * slot * es);
    rc = LaunchReduce<D>(src, w, Off(yv, off * es), nullptr, m, kVecBytes, kThreads, kBlocks,
                         ctx->num_sms, st);
    if (rc != kOk) return rc;
    if ((rc = Barrier(ctx, st)) != kOk) return rc;
  }

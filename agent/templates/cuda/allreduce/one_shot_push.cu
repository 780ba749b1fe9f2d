  const long long n = nin;
  if (nout != n) return kBadArgs;
  const long long slot = ChunkElems<D>(MinLL(kChunkBytes, (long long)ctx->scratch_bytes / w));
  if (slot <= 0) return kNoScratch;
  for (long long off = 0; off < n; off += slot) {
    const long long m = MinLL(slot, n - off);
    Segs segs;
    for (int i = 0; i < w; ++i) {  // peer stores into every rank's slot r
      const int d = (r + i) % w;
      segs.src[i] = Off(xv, off * es);
      segs.dst[i] = Off(ctx->peer_scratch[d], (long long)r * slot * es);
      segs.bytes[i] = m * es;
    }
    rc = LaunchCopy(segs, w, m * es, kVecBytes, kThreads, kBlocks, ctx->num_sms, st);
    if (rc != kOk) return rc;
    if ((rc = Barrier(ctx, st)) != kOk) return rc;
    Ptrs src;
    for (int s = 0; s < w; ++s) src.p[s] = Off(ctx->peer_scratch[r], (long long)s * slot * es);
    rc = LaunchReduce<D>(src, w, Off(yv, off * es), nullptr, m, kVecBytes, kThreads, kBlocks,
                         ctx->num_sms, st);
    if (rc != kOk) return rc;
    if ((rc = Barrier(ctx, st)) != kOk) return rc;
  }

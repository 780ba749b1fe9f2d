  const long long n = nin;
  if (nout != (long long)w * n) return kBadArgs;
  const long long chunk = ChunkElems<D>(MinLL(kChunkBytes, (long long)ctx->scratch_bytes));
  if (chunk <= 0) return kNoScratch;
  for (long long off = 0; off < n; off += chunk) {
    const long long m = MinLL(chunk, n - off);
    if (cudaMemcpyAsync(ctx->peer_scratch[r], Off(xv, off * es), m * es, cudaMemcpyDefault, st) !=
        cudaSuccess) return kCuda;
    if ((rc = Barrier(ctx, st)) != kOk) return rc;
    Segs segs;
    for (int i = 0; i < w; ++i) {  // peer loads, own rank's first
      const int s = (r + i) % w;
      segs.src[i] = ctx->peer_scratch[s];
      segs.dst[i] = Off(yv, ((long long)s * n + off) * es);
      segs.bytes[i] = m * es;
    }
    rc = LaunchCopy(segs, w, m * es, kVecBytes, kThreads, kBlocks, ctx->num_sms, st);
    if (rc != kOk) return rc;
    if ((rc = Barrier(ctx, st)) != kOk) return rc;
  }

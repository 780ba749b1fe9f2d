  const long long n = nin;
  if (nout != n) return kBadArgs;
  const long long chunk = ChunkElems<D>(MinLL(kChunkBytes, (long long)ctx->scratch_bytes));
  if (chunk <= 0) return kNoScratch;
  const long long unit = kAlign / es;
  for (long long off = 0; off < n; off += chunk) {
    const long long m = MinLL(chunk, n - off);
    if (cudaMemcpyAsync(ctx->peer_scratch[r], Off(xv, off * es), m * es, cudaMemcpyDefault, st) !=
        cudaSuccess) return kCuda;
    if ((rc = Barrier(ctx, st)) != kOk) return rc;
    // Reduce-scatter: this rank reduces slice r of the chunk from every peer,
    // into its output and back into its own scratch for the all-gather.
    const long long slice = ((m + w - 1) / w + unit - 1) / unit * unit;
    const long long lo = MinLL((long long)r * slice, m);
    const long long hi = MinLL(lo + slice, m);
    Ptrs src;
    for (int s = 0; s < w; ++s) src.p[s] = Off(ctx->peer_scratch[s], lo * es);
    rc = LaunchReduce<D>(src, w, Off(yv, (off + lo) * es), Off(ctx->peer_scratch[r], lo * es),
                         hi - lo, kVecBytes, kThreads, kBlocks, ctx->num_sms, st);
    if (rc != kOk) return rc;
    if ((rc = Barrier(ctx, st)) != kOk) return rc;
    // All-gather: load the other slices from their owners.
    Segs segs;
    int nseg = 0;
    for (int i = 1; i < w; ++i) {
      const int s = (r + i) % w;
      const long long slo = MinLL((long long)s * slice, m);
      const long long shi = MinLL(slo + slice, m);
      if (shi <= slo) continue;
      segs.src[nseg] = Off(ctx->peer_scratch[s], slo * es);
      segs.dst[nseg] = Off(yv, (off + slo) * es);
      segs.bytes[nseg] = (shi - slo) * es;
      ++nseg;
    }
    rc = LaunchCopy(segs, nseg, slice * es, kVecBytes, kThreads, kBlocks, ctx->num_sms, st);
    if (rc != kOk) return rc;
    if ((rc = Barrier(ctx, st)) != kOk) return rc;
  }

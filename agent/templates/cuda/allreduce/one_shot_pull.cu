  const long long n = nin;
  if (nout != n) return kBadArgs;
  const long long chunk = ChunkElems<D>(MinLL(kChunkBytes, (long long)ctx->scratch_bytes));
  if (chunk <= 0) return kNoScratch;
  for (long long off = 0; off < n; off += chunk) {
    const long long m = MinLL(chunk, n - off);
    if (cudaMemcpyAsync(ctx->peer_scratch[r], Off(xv, off * es), m * es, cudaMemcpyDefault, st) !=
        cudaSuccess) return kCuda;
    if ((rc = Barrier(ctx, st)) != kOk) return rc;
    Ptrs src;
    for (int s = 0; s < w; ++s) src.p[s] = ctx->peer_scratch[s];
    rc = LaunchReduce<D>(src, w, Off(yv, off * es), nullptr, m, kVecBytes, kThreads, kBlocks,
                         ctx->num_sms, st);
    if (rc != kOk) return rc;
    if ((rc = Barrier(ctx, st)) != kOk) return rc;
  }

  const long long n = nin;
  if (nout != (long long)w * n) return kBadArgs;
  const long long chunk = ChunkElems<D>(MinLL(kChunkBytes, (long long)ctx->scratch_bytes));
  if (chunk <= 0) return kNoScratch;
  for (long long off = 0; off < n; off += chunk) {
    const long long m = MinLL(chunk, n - off);
    if (cudaMemcpyAsync(ctx->peer_scratch[r], Off(xv, off * es), m * es, cudaMemcpyDefault, st) !=
        cudaSuccess) return kCuda;
    if ((rc = Barrier(ctx, st)) != kOk) return rc;
    for (int i = 0; i < w; ++i) {  // copy engine pulls every rank's chunk
      const int s = (r + i) % w;
      if (cudaMemcpyAsync(Off(yv, ((long long)s * n + off) * es), ctx->peer_scratch[s], m * es,
                          cudaMemcpyDefault, st) != cudaSuccess) return kCuda;
    }
    if ((rc = Barrier(ctx, st)) != kOk) return rc;
  }

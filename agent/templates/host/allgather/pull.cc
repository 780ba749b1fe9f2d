  const long long n = nin;
  if (nout != (long long)w * n) return kBadArgs;
  const long long chunk = ChunkElems<D>(MinLL(kChunkBytes, (long long)ctx->scratch_bytes));
  if (chunk <= 0) return kNoScratch;
  for (long long off = 0; off < n; off += chunk) {
    const long long m = MinLL(chunk, n - off);
    memcpy(mine, x + off, (size_t)(m * es));
    if ((rc = HostBarrier(ctx)) != kOk) return rc;
    for (int i = 0; i < w; ++i) {
      const int s = (r + i) % w;
      memcpy(y + (long long)s * n + off, ctx->peer_scratch[s], (size_t)(m * es));
    }
    if ((rc = HostBarrier(ctx)) != kOk) return rc;
  }

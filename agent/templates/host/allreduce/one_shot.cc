  const long long n = nin;
  if (nout != n) return kBadArgs;
  const long long chunk = ChunkElems<D>(MinLL(kChunkBytes, (long long)ctx->scratch_bytes));
  if (chunk <= 0) return kNoScratch;
  for (long long off = 0; off < n; off += chunk) {
    const long long m = MinLL(chunk, n - off);
    memcpy(mine, x + off, (size_t)(m * es));
    if ((rc = HostBarrier(ctx)) != kOk) return rc;
    for (int s = 0; s < w; ++s) src[s] = static_cast<const S*>(ctx->peer_scratch[s]);
    Reduce<D, kTile>(y + off, 0, src, w, m);
    if ((rc = HostBarrier(ctx)) != kOk) return rc;
  }

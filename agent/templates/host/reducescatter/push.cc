  const long long n = nout;
  if (nin != (long long)w * n) return kBadArgs;
  const long long slot = ChunkElems<D>(MinLL(kChunkBytes, (long long)ctx->scratch_bytes / w));
  if (slot <= 0) return kNoScratch;
  for (long long off = 0; off < n; off += slot) {
    const long long m = MinLL(slot, n - off);
    for (int i = 0; i < w; ++i) {
      const int d = (r + i) % w;
      memcpy(static_cast<S*>(ctx->peer_scratch[d]) + (long long)r * slot,
             x + (long long)d * n + off, (size_t)(m * es));
    }
    if ((rc = HostBarrier(ctx)) != kOk) return rc;
    for (int s = 0; s < w; ++s) src[s] = mine + (long long)s * slot;
    Reduce<D, kTile>(y + off, 0, src, w, m);
    if ((rc = HostBarrier(ctx)) != kOk) return rc;
  }

  const long long n = nout;
  if (nin != (long long)w * n) return kBadArgs;
  const long long slot = ChunkElems<D>(MinLL(kChunkBytes, (long long)ctx->scratch_bytes / w));
  if (slot <= 0) return kNoScratch;
  for (long long off = 0; off < n; off += slot) {
    const long long m = MinLL(slot, n - off);
    for (int d = 0; d < w; ++d) {
      memcpy(mine + (long long)d * slot, x + (long long)d * n + off, (size_t)(m * es));
    }
    if ((rc = HostBarrier(ctx)) != kOk) return rc;
    for (int s = 0; s < w; ++s) {
      src[s] = static_cast<const S*>(ctx->peer_scratch[s]) + (long long)r * slot;
    }
    Reduce<D, kTile>(y + off, 0, src, w, m);
    if ((rc = HostBarrier(ctx)) != kOk) return rc;
  }

  const long long n = nin;
  if (nout != n) return kBadArgs;
  const long long chunk = ChunkElems<D>(MinLL(kChunkBytes, (long long)ctx->scratch_bytes));
  if (chunk <= 0) return kNoScratch;
  const long long unit = kAlign / es;
  for (long long off = 0; off < n; off += chunk) {
    const long long m = MinLL(chunk, n - off);
    memcpy(mine, x + off, (size_t)(m * es));
    if ((rc = HostBarrier(ctx)) != kOk) return rc;
    const long long slice = ((m + w - 1) / w + unit - 1) / unit * unit;
    const long long lo = MinLL((long long)r * slice, m);
    const long long hi = MinLL(lo + slice, m);
    for (int s = 0; s < w; ++s) src[s] = static_cast<const S*>(ctx->peer_scratch[s]) + lo;
    Reduce<D, kTile>(y + off + lo, mine + lo, src, w, hi - lo);
    if ((rc = HostBarrier(ctx)) != kOk) return rc;
    for (int i = 1; i < w; ++i) {
      const int s = (r + i) % w;
      const long long slo = MinLL((long long)s * slice, m);
      const long long shi = MinLL(slo + slice, m);
      if (shi > slo) {
        memcpy(y + off + slo, static_cast<const S*>(ctx->peer_scratch[s]) + slo,
               (size_t)((shi - slo) * es));
      }
    }
    if ((rc = HostBarrier(ctx)) != kOk) return rc;
  }

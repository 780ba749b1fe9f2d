// CompileCache: the compiler's on-disk content-addressed cache (docs/design.md
// sections 5-7; issue 5), split out of compiler.cc (issue 20). Compiler
// (compiler.h) decides keys and what is cacheable; this file owns the files.
//
// Contract
//   <dir>/<key>.json (metadata, also for compile errors) plus <key>.so for a
//   library; key = 64 lower-case hex digits. Lookup() re-verifies the
//   library's size and sha256 recorded in the metadata, so a truncated,
//   partial or tampered entry is reported as damaged, never served. Files are
//   written to a temporary name and renamed (WriteFileAtomic), library before
//   metadata, so readers only ever see complete files and metadata that
//   exists names a complete library. LRU: Touch() sets the metadata's mtime;
//   ScanAndEvict() rescans the directory under <dir>/.lock and removes the
//   least recently used entries while the total exceeds max_bytes, never
//   `keep`, plus stale temporary files and orphaned libraries of crashed
//   writers (older than kStaleAge). The directory is the truth, so several
//   processes may share it. LockKey() takes <dir>/.locks/<key> (an flock
//   unlinked on release) so processes compile one key once.
//
// Thread safety
//   Every method may be called from any number of threads at once; the only
//   in-memory state is stats(), guarded by an internal mutex. FileLock and
//   the free functions are safe per object / per call.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace pkforge::executor {

// Temporary files, orphaned libraries and scratch folders younger than this
// may belong to a writer in another process that is still working.
inline constexpr auto kStaleAge = std::chrono::minutes(10);
// How often blocking waits poll a cancel flag.
inline constexpr auto kPollInterval = std::chrono::milliseconds(5);

inline bool IsCancelled(const std::atomic<bool>* cancel) {
  return cancel != nullptr && cancel->load(std::memory_order_relaxed);
}
inline absl::Status CancelledError() { return absl::CancelledError("compile cancelled"); }

// Reads a whole regular file without following a symlink in its last
// component (cache files are ours, but the cache directory may be shared).
// DATA_LOSS when it is not a regular file, over max_bytes, or (expect_size
// >= 0) of another size.
absl::StatusOr<std::string> ReadRegularFile(const std::string& path, int64_t max_bytes,
                                            int64_t expect_size = -1);

// Writes `data` to dir/name atomically: readers see the old file or the
// complete new one, never a prefix. Not fsync'ed: after a power loss an entry
// may be short, which the size+sha256 check on every hit catches.
absl::Status WriteFileAtomic(const std::string& dir, const std::string& name, std::string_view data,
                             mode_t mode);

// An exclusive flock on `path` that other threads and processes respect.
// With remove_on_release the file is unlinked while still locked; an acquirer
// that locked an already-unlinked file notices (inode differs) and retries, the
// standard protocol that keeps per-key lock files from accumulating.
class FileLock {
 public:
  FileLock() = default;
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  // Blocks until held; with a non-null `cancel`, polls it (CANCELLED).
  absl::Status Acquire(const std::string& path, bool remove_on_release,
                       const std::atomic<bool>* cancel);

 private:
  int fd_ = -1;
  std::string path_;
  bool remove_on_release_ = false;
};

// One cache entry as the Compiler uses it.
struct CacheEntry {
  bool ok = false;
  bool timed_out = false;
  std::string compiler;
  std::vector<std::string> flags;
  std::string output;
  bool output_truncated = false;
  double compile_ms = 0;
  std::shared_ptr<const std::string> artifact;  // the library, when ok
};

class CompileCache {
 public:
  struct Stats {
    int64_t evictions = 0;  // entries removed by this process
    int64_t bytes = 0;      // cache size at the last scan (all processes' entries)
    int64_t entries = 0;
  };

  CompileCache(std::string dir, int64_t max_bytes, int64_t max_artifact_bytes);
  CompileCache(const CompileCache&) = delete;
  CompileCache& operator=(const CompileCache&) = delete;

  // Creates <dir> and <dir>/.locks if missing.
  absl::Status Prepare() const;
  const std::string& dir() const { return dir_; }

  // A verified entry, or nullptr when absent or damaged (then `damage` says how).
  std::shared_ptr<const CacheEntry> Lookup(const std::string& key, std::string* damage) const;
  // Marks `key` most recently used.
  void Touch(const std::string& key) const;
  void Remove(const std::string& key) const;
  // Writes the entry (library, then metadata) and evicts, sparing `key`.
  absl::Status Store(const std::string& key, const CacheEntry& entry);
  // Rescans the directory under the global lock and evicts down to the bound,
  // sparing `keep` (may be empty).
  absl::Status ScanAndEvict(const std::string& keep);
  // Takes the cross-process lock of `key` into *lock (CANCELLED when cancel is set).
  absl::Status LockKey(const std::string& key, const std::atomic<bool>* cancel,
                       FileLock* lock) const;

  Stats stats() const;

 private:
  const std::string dir_;
  const int64_t max_bytes_;
  const int64_t max_artifact_bytes_;
  mutable absl::Mutex mu_;
  Stats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace pkforge::executor

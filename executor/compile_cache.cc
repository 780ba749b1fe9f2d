#include "executor/compile_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>
#include <utility>

#include "common/sha256.h"
#include "common/status.h"
#include "common/unique_fd.h"
#include "fmt/format.h"
#include "spdlog/spdlog.h"

namespace pkforge::executor {

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kMetaFormat = 1;
constexpr int64_t kMaxMetaBytes = 16 << 20;

bool IsHexKey(std::string_view s) {
  if (s.size() != 64) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::string UniqueSuffix() {
  static std::atomic<uint64_t> counter{0};
  return fmt::format("{}-{}-{:x}", getpid(), counter.fetch_add(1),
                     static_cast<uint64_t>(Clock::now().time_since_epoch().count()) & 0xffffff);
}

}  // namespace

absl::StatusOr<std::string> ReadRegularFile(const std::string& path, int64_t max_bytes,
                                            int64_t expect_size) {
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd.valid()) return ErrnoError(fmt::format("open {}", path), errno);
  struct stat st;
  if (fstat(fd.get(), &st) != 0) return ErrnoError(fmt::format("fstat {}", path), errno);
  if (!S_ISREG(st.st_mode)) return absl::DataLossError(path + " is not a regular file");
  if (st.st_size > max_bytes) return absl::DataLossError(path + " is too large");
  if (expect_size >= 0 && st.st_size != expect_size) {
    return absl::DataLossError(
        fmt::format("{} is {} bytes, expected {}", path, st.st_size, expect_size));
  }
  std::string data(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < data.size()) {
    ssize_t n = read(fd.get(), data.data() + got, data.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError(fmt::format("read {}", path), errno);
    if (n == 0) return absl::DataLossError(path + " shrank while being read");
    got += static_cast<size_t>(n);
  }
  return data;
}

absl::Status WriteFileAtomic(const std::string& dir, const std::string& name, std::string_view data,
                             mode_t mode) {
  const std::string tmp = fmt::format("{}/.tmp-{}-{}", dir, name, UniqueSuffix());
  const std::string final_path = dir + "/" + name;
  {
    UniqueFd fd(open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd.valid()) return ErrnoError(fmt::format("create {}", tmp), errno);
    size_t done = 0;
    while (done < data.size()) {
      ssize_t n = write(fd.get(), data.data() + done, data.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        int err = errno;
        unlink(tmp.c_str());
        return ErrnoError(fmt::format("write {}", tmp), err);
      }
      done += static_cast<size_t>(n);
    }
    // fchmod: the umask must not decide whether the sandboxed worker can read it.
    if (fchmod(fd.get(), mode) != 0) {
      int err = errno;
      unlink(tmp.c_str());
      return ErrnoError(fmt::format("chmod {}", tmp), err);
    }
  }
  if (rename(tmp.c_str(), final_path.c_str()) != 0) {
    int err = errno;
    unlink(tmp.c_str());
    return ErrnoError(fmt::format("rename to {}", final_path), err);
  }
  return absl::OkStatus();
}

FileLock::~FileLock() {
  if (fd_ < 0) return;
  if (remove_on_release_) unlink(path_.c_str());
  close(fd_);
}

absl::Status FileLock::Acquire(const std::string& path, bool remove_on_release,
                               const std::atomic<bool>* cancel) {
  for (;;) {
    if (IsCancelled(cancel)) return CancelledError();
    UniqueFd fd(open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd.valid()) return ErrnoError(fmt::format("open lock {}", path), errno);
    if (cancel == nullptr) {
      while (flock(fd.get(), LOCK_EX) != 0) {
        if (errno != EINTR) return ErrnoError(fmt::format("flock {}", path), errno);
      }
    } else {
      // Polled so that a cancelled request stops waiting for another
      // process's compile.
      while (flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK && errno != EINTR) {
          return ErrnoError(fmt::format("flock {}", path), errno);
        }
        if (IsCancelled(cancel)) return CancelledError();
        std::this_thread::sleep_for(kPollInterval * 2);
      }
    }
    struct stat held, now;
    if (fstat(fd.get(), &held) == 0 && stat(path.c_str(), &now) == 0 && held.st_ino == now.st_ino &&
        held.st_dev == now.st_dev) {
      if (fd_ >= 0) close(fd_);
      fd_ = fd.Release();
      path_ = path;
      remove_on_release_ = remove_on_release;
      return absl::OkStatus();
    }
  }
}

CompileCache::CompileCache(std::string dir, int64_t max_bytes, int64_t max_artifact_bytes)
    : dir_(std::move(dir)), max_bytes_(max_bytes), max_artifact_bytes_(max_artifact_bytes) {}

absl::Status CompileCache::Prepare() const {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) return absl::FailedPreconditionError(fmt::format("cache_dir {}: {}", dir_, ec.message()));
  const std::string locks = dir_ + "/.locks";
  if (mkdir(locks.c_str(), 0711) != 0 && errno != EEXIST)
    return ErrnoError("mkdir " + locks, errno);
  return absl::OkStatus();
}

void CompileCache::Touch(const std::string& key) const {
  utimensat(AT_FDCWD, (dir_ + "/" + key + ".json").c_str(), nullptr, AT_SYMLINK_NOFOLLOW);
}

absl::Status CompileCache::LockKey(const std::string& key, const std::atomic<bool>* cancel,
                                   FileLock* lock) const {
  return lock->Acquire(dir_ + "/.locks/" + key, true, cancel);
}

CompileCache::Stats CompileCache::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

std::shared_ptr<const CacheEntry> CompileCache::Lookup(const std::string& key,
                                                       std::string* damage) const {
  damage->clear();
  const std::string base = dir_ + "/" + key;
  auto meta_text = ReadRegularFile(base + ".json", kMaxMetaBytes);
  if (!meta_text.ok()) {
    if (!absl::IsNotFound(meta_text.status())) *damage = meta_text.status().ToString();
    return nullptr;
  }
  auto entry = std::make_shared<CacheEntry>();
  std::string so_sha;
  int64_t so_bytes = -1;
  try {
    const auto j = nlohmann::json::parse(*meta_text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object() || j.value("format", 0) != kMetaFormat ||
        j.value("key", std::string()) != key) {
      *damage = "metadata is not a format-1 object for this key";
      return nullptr;
    }
    entry->ok = j.at("ok").get<bool>();
    entry->compiler = j.at("compiler").get<std::string>();
    entry->flags = j.at("flags").get<std::vector<std::string>>();
    entry->output = j.at("output").get<std::string>();
    entry->output_truncated = j.at("output_truncated").get<bool>();
    entry->compile_ms = j.at("compile_ms").get<double>();
    if (entry->ok) {
      so_bytes = j.at("artifact_bytes").get<int64_t>();
      so_sha = j.at("artifact_content_sha256").get<std::string>();
    }
  } catch (const nlohmann::json::exception& e) {
    *damage = fmt::format("bad metadata: {}", e.what());
    return nullptr;
  }
  if (entry->ok) {
    auto so = ReadRegularFile(base + ".so", max_artifact_bytes_, so_bytes);
    if (!so.ok() || Sha256Hex(*so) != so_sha) {
      *damage = so.ok() ? "library content does not match its sha256" : so.status().ToString();
      return nullptr;
    }
    entry->artifact = std::make_shared<const std::string>(std::move(*so));
  }
  return entry;
}

void CompileCache::Remove(const std::string& key) const {
  // Metadata first: without it the library is an orphan, never served.
  const std::string base = dir_ + "/" + key;
  unlink((base + ".json").c_str());
  unlink((base + ".so").c_str());
}

absl::Status CompileCache::Store(const std::string& key, const CacheEntry& entry) {
  nlohmann::json j = {{"format", kMetaFormat},
                      {"key", key},
                      {"ok", entry.ok},
                      {"compiler", entry.compiler},
                      {"flags", entry.flags},
                      {"output", entry.output},
                      {"output_truncated", entry.output_truncated},
                      {"compile_ms", entry.compile_ms}};
  if (entry.ok) {
    // Library before metadata: metadata that exists names a complete library.
    RETURN_IF_ERROR(WriteFileAtomic(dir_, key + ".so", *entry.artifact, 0444));
    j["artifact_bytes"] = static_cast<int64_t>(entry.artifact->size());
    j["artifact_content_sha256"] = Sha256Hex(*entry.artifact);
  }
  RETURN_IF_ERROR(WriteFileAtomic(
      dir_, key + ".json", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), 0444));
  return ScanAndEvict(key);
}

absl::Status CompileCache::ScanAndEvict(const std::string& keep) {
  // The directory, not this process's memory, is the truth: other executors
  // may share it. One scanner at a time, so two never both evict for the
  // same excess.
  FileLock lock;
  RETURN_IF_ERROR(lock.Acquire(dir_ + "/.lock", false, nullptr));
  struct Item {
    int64_t bytes = 0;
    struct timespec used = {0, 0};
    bool has_meta = false;
  };
  std::map<std::string, Item> items;
  const auto now = std::chrono::system_clock::now();
  auto is_stale = [&](const struct stat& st) {
    auto t = std::chrono::system_clock::time_point(std::chrono::seconds(st.st_mtim.tv_sec));
    return now - t > kStaleAge;
  };
  DIR* dir = opendir(dir_.c_str());
  if (dir == nullptr) return ErrnoError("opendir " + dir_, errno);
  for (struct dirent* e = readdir(dir); e != nullptr; e = readdir(dir)) {
    const std::string name = e->d_name;
    const std::string path = dir_ + "/" + name;
    struct stat st;
    if (fstatat(dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (name.rfind(".tmp-", 0) == 0) {
      if (is_stale(st)) unlink(path.c_str());  // a crashed writer's leftovers
      continue;
    }
    const size_t dot = name.rfind('.');
    if (dot == std::string::npos || !IsHexKey(std::string_view(name).substr(0, dot))) continue;
    const std::string key = name.substr(0, dot);
    const std::string ext = name.substr(dot);
    if (ext != ".json" && ext != ".so") continue;
    Item& item = items[key];
    item.bytes += st.st_size;
    if (ext == ".json") {
      item.has_meta = true;
      item.used = st.st_mtim;
    } else if (!item.has_meta) {
      item.used = st.st_mtim;
    }
  }
  closedir(dir);

  int64_t total = 0;
  std::vector<std::pair<struct timespec, std::string>> order;
  for (auto it = items.begin(); it != items.end();) {
    struct stat st;
    // A library without metadata is a writer's first half (young) or the
    // remains of a crash or a half-done eviction (old: removed).
    if (!it->second.has_meta && stat((dir_ + "/" + it->first + ".so").c_str(), &st) == 0 &&
        is_stale(st)) {
      Remove(it->first);
      it = items.erase(it);
      continue;
    }
    total += it->second.bytes;
    order.push_back({it->second.used, it->first});
    ++it;
  }
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.first.tv_sec != b.first.tv_sec ? a.first.tv_sec < b.first.tv_sec
                                            : a.first.tv_nsec < b.first.tv_nsec;
  });
  int64_t evicted = 0;
  int64_t entries = static_cast<int64_t>(items.size());
  for (const auto& [used, key] : order) {
    if (total <= max_bytes_) break;
    if (key == keep) continue;
    Remove(key);
    total -= items[key].bytes;
    --entries;
    ++evicted;
    spdlog::debug("compiler: evicted {} ({} bytes)", key, items[key].bytes);
  }
  absl::MutexLock guard(&mu_);
  stats_.evictions += evicted;
  stats_.bytes = total;
  stats_.entries = entries;
  return absl::OkStatus();
}

}  // namespace pkforge::executor

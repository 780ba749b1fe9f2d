#include "cli/offline.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "common/clock.h"
#include "common/ids.h"
#include "common/status.h"
#include "convert/convert.h"

namespace pkforge::cli {

using storage::TrajectoryStore;
using Access = TrajectoryStore::Options::Access;

Access DbAccessFor(const std::string& db) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string wal = db + "-wal";
  if (fs::exists(wal, ec) && fs::file_size(wal, ec) > 0) return Access::kReadOnly;
  struct stat st {};
  if (stat(db.c_str(), &st) != 0) return Access::kReadOnly;
  // No write bit at all counts too: root passes access(W_OK) on a 0444 file,
  // but whoever made it 0444 meant it not to change.
  const bool file_fixed = (st.st_mode & 0222) == 0 || access(db.c_str(), W_OK) != 0;
  fs::path dir = fs::absolute(db, ec).parent_path();
  struct stat dst {};
  const bool dir_fixed = stat(dir.c_str(), &dst) == 0 &&
                         ((dst.st_mode & 0222) == 0 || access(dir.c_str(), W_OK) != 0);
  return file_fixed || dir_fixed ? Access::kImmutable : Access::kReadOnly;
}

absl::StatusOr<std::unique_ptr<TrajectoryStore>> OpenDb(const std::string& db) {
  if (db.empty()) return absl::InvalidArgumentError("--db PATH is required");
  TrajectoryStore::Options options;
  options.access = DbAccessFor(db);
  options.read_connections = 1;  // one command, one thread
  auto store = TrajectoryStore::Open(db, options);
  if (!store.ok()) return Annotate(store.status(), "--db");
  return store;
}

absl::StatusOr<v1::Trajectory> OfflineShowTrajectory(const std::string& db,
                                                     const std::string& job_id) {
  RETURN_IF_ERROR(Annotate(ValidateId(job_id, "job"), "job"));
  ASSIGN_OR_RETURN(std::unique_ptr<TrajectoryStore> store, OpenDb(db));
  // The same view GetTrajectory(include_sources) gives (convert/convert.h).
  convert::TrajectoryOptions options;
  options.include_sources = true;
  return convert::LoadTrajectory(*store, job_id, options, SystemClock::Get()->NowWallMicros());
}

}  // namespace pkforge::cli

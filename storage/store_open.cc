// Opening the trajectory store (TrajectoryStore::Open): the file URI, the
// writer connection with its pragmas and migrations, the read pool, the
// read-only mode; and the page limit (store_impl.h).
#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "fmt/format.h"
#include "storage/migrations.h"
#include "storage/sqlite_util.h"
#include "storage/store_impl.h"

namespace pkforge::storage {
namespace store_internal {

// --------------------------------------------------------------------- open

// "file:" URI of `path` for sqlite3_open_v2 with SQLITE_OPEN_URI: absolute,
// every byte outside a safe set percent-encoded (a '?' or '#' in a file name
// would otherwise start the query or fragment).
std::string FileUri(const std::string& path, const char* query) {
  std::error_code ec;
  std::filesystem::path abs = std::filesystem::absolute(path, ec);
  const std::string p = ec ? path : abs.string();
  std::string uri = "file:";
  for (unsigned char c : p) {
    if (std::isalnum(c) || c == '/' || c == '.' || c == '_' || c == '-' || c == '~') {
      uri.push_back(static_cast<char>(c));
    } else {
      uri += fmt::format("%{:02X}", c);
    }
  }
  return uri + "?" + query;
}

// Options::access = kReadOnly / kImmutable (store.h, "Read-only opening").
absl::Status OpenReadOnlyImpl(const std::string& path, const TrajectoryStore::Options& options,
                              std::unique_ptr<SqliteTrajectoryStore>* out) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return absl::NotFoundError(fmt::format("database {} does not exist", path));
  }
  const bool immutable = options.access == TrajectoryStore::Options::Access::kImmutable;
  // immutable=1 skips the WAL: commits still in a -wal file would be invisible.
  const std::string wal = path + "-wal";
  if (immutable && std::filesystem::exists(wal, ec) && std::filesystem::file_size(wal, ec) > 0) {
    return absl::FailedPreconditionError(fmt::format(
        "{} holds commits not yet in the file: the immutable mode would not see them", wal));
  }
  const std::string uri = FileUri(path, immutable ? "mode=ro&immutable=1" : "mode=ro");
  const int flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_URI;
  ASSIGN_OR_RETURN(std::unique_ptr<Connection> file,
                   Connection::Open(uri, flags, options.busy_timeout_ms));
  absl::StatusOr<int> version = internal::ReadUserVersion(file->db());
  if (!version.ok()) {
    if (!immutable && version.status().message().find("readonly") != std::string_view::npos) {
      // SQLite cannot create the -shm file a WAL reader needs next to the file.
      return Annotate(version.status(),
                      "reading a WAL-mode file whose directory is not writable needs the "
                      "immutable mode (the file must not change) or a copy");
    }
    return version.status();
  }
  if (*version > CurrentSchemaVersion()) {
    return internal::NewerSchemaError(*version, CurrentSchemaVersion());
  }
  if (*version < 1) {
    return absl::FailedPreconditionError(
        "not a pkforge trajectory database (user_version 0, no schema)");
  }
  auto store = std::make_unique<SqliteTrajectoryStore>(path, options, nullptr);
  if (*version == CurrentSchemaVersion()) {
    store->readers().Add(std::move(file));
    for (int i = 1; i < options.read_connections; ++i) {
      ASSIGN_OR_RETURN(std::unique_ptr<Connection> reader,
                       Connection::Open(uri, flags, options.busy_timeout_ms));
      store->readers().Add(std::move(reader));
    }
    *out = std::move(store);
    return absl::OkStatus();
  }
  // An older schema: the queries need the current columns, and the file must
  // not be migrated, so the migrations upgrade a private in-memory copy.
  ASSIGN_OR_RETURN(std::unique_ptr<Connection> copy,
                   Connection::Open(":memory:", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                                    options.busy_timeout_ms));
  sqlite3_backup* backup = sqlite3_backup_init(copy->db(), "main", file->db(), "main");
  if (backup == nullptr) {
    return internal::SqliteError(sqlite3_errcode(copy->db()), copy->db(),
                                 "copying the file into memory");
  }
  const int step_rc = sqlite3_backup_step(backup, -1);
  const int finish_rc = sqlite3_backup_finish(backup);
  if (step_rc != SQLITE_DONE) {
    return internal::SqliteError(step_rc, file->db(), "copying the file into memory");
  }
  if (finish_rc != SQLITE_OK) {
    return internal::SqliteError(finish_rc, copy->db(), "copying the file into memory");
  }
  file.reset();
  RETURN_IF_ERROR(Annotate(internal::MigrateTo(copy->db(), CurrentSchemaVersion()),
                           fmt::format("upgrading the in-memory copy of a version {} file",
                                       *version)));
  store->readers().Add(std::move(copy));
  *out = std::move(store);
  return absl::OkStatus();
}

absl::Status OpenImpl(const std::string& path, const TrajectoryStore::Options& options,
                      std::unique_ptr<SqliteTrajectoryStore>* out) {
  if (path.empty()) return absl::InvalidArgumentError("path is empty");
  if (options.read_connections < 1 || options.read_connections > 64) {
    return absl::InvalidArgumentError(
        fmt::format("read_connections must be in 1..64, got {}", options.read_connections));
  }
  if (options.busy_timeout_ms < 0) {
    return absl::InvalidArgumentError(
        fmt::format("busy_timeout_ms must be >= 0, got {}", options.busy_timeout_ms));
  }
  if (options.clock == nullptr) return absl::InvalidArgumentError("clock is null");
  if (options.access != TrajectoryStore::Options::Access::kReadWrite) {
    return OpenReadOnlyImpl(path, options, out);
  }

  ASSIGN_OR_RETURN(
      std::unique_ptr<Connection> writer,
      Connection::Open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, options.busy_timeout_ms));
  sqlite3* db = writer->db();
  // Until the version check passes the file may belong to a newer binary:
  // closing must not checkpoint that binary's WAL into the main file.
  sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  ASSIGN_OR_RETURN(int version, internal::ReadUserVersion(db));
  if (version > CurrentSchemaVersion()) {
    return internal::NewerSchemaError(version, CurrentSchemaVersion());
  }

  ASSIGN_OR_RETURN(std::string mode, writer->QueryText("PRAGMA journal_mode = WAL"));
  if (mode != "wal") {
    return absl::FailedPreconditionError(
        fmt::format("cannot switch to WAL journal mode (got '{}')", mode));
  }
  // FULL: the WAL is fsynced at every commit, which is what lets a caller
  // acknowledge a write as soon as it returns (NORMAL may lose the last
  // commits on power loss).
  RETURN_IF_ERROR(writer->Exec("PRAGMA synchronous = FULL"));
  RETURN_IF_ERROR(writer->Exec("PRAGMA foreign_keys = ON"));
  // Keeps a WAL that grew during a burst from staying large on disk.
  RETURN_IF_ERROR(writer->Exec("PRAGMA journal_size_limit = 67108864"));
  if (options.max_page_count < 0) {
    return absl::InvalidArgumentError(
        fmt::format("max_page_count must be >= 0, got {}", options.max_page_count));
  }
  if (options.max_page_count > 0) {
    RETURN_IF_ERROR(writer->Exec(
        fmt::format("PRAGMA max_page_count = {}", options.max_page_count).c_str()));
  }
  ASSIGN_OR_RETURN(std::string fk, writer->QueryText("PRAGMA foreign_keys"));
  if (fk != "1") {
    return absl::FailedPreconditionError("this SQLite build does not enforce foreign keys");
  }
  RETURN_IF_ERROR(internal::MigrateTo(db, CurrentSchemaVersion()));
  sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 0, nullptr);

  auto store = std::make_unique<SqliteTrajectoryStore>(path, options, std::move(writer));
  for (int i = 0; i < options.read_connections; ++i) {
    ASSIGN_OR_RETURN(std::unique_ptr<Connection> reader,
                     Connection::Open(path, SQLITE_OPEN_READONLY, options.busy_timeout_ms));
    store->readers().Add(std::move(reader));
  }
  *out = std::move(store);
  return absl::OkStatus();
}

absl::StatusOr<int64_t> SqliteTrajectoryStore::SetMaxPageCount(int64_t pages) {
  if (pages < 0) return Invalid("max_page_count", "must be >= 0");
  int64_t now = 0;
  // On the writer connection (the limit is per connection), as a write of
  // its own so it never runs inside another leader's batch.
  RETURN_IF_ERROR(Write("SetMaxPageCount", WriteShape::kOneStatement, [&](BatchTxn& txn) {
    ASSIGN_OR_RETURN(Statement st, txn.conn().Prepare(
                                       fmt::format("PRAGMA max_page_count = {}", pages)));
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (row) now = st.Int64(0);
    return absl::OkStatus();
  }));
  return now;
}

}  // namespace store_internal

absl::StatusOr<std::unique_ptr<TrajectoryStore>> TrajectoryStore::Open(const std::string& path,
                                                                       Options options) {
  std::unique_ptr<store_internal::SqliteTrajectoryStore> store;
  RETURN_IF_ERROR(Annotate(store_internal::OpenImpl(path, options, &store), fmt::format("opening {}", path)));
  return std::unique_ptr<TrajectoryStore>(std::move(store));
}

}  // namespace pkforge::storage

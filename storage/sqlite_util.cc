#include "storage/sqlite_util.h"

#include <utility>

#include "common/status.h"
#include "fmt/format.h"

namespace pkforge::storage::internal {

absl::Status SqliteError(int rc, sqlite3* db, std::string_view what) {
  // The connection's message is only meaningful when it belongs to this rc.
  const char* detail = (db != nullptr && sqlite3_extended_errcode(db) == rc) ? sqlite3_errmsg(db)
                                                                             : sqlite3_errstr(rc);
  std::string msg = fmt::format("sqlite: {}: {} (code {})", what, detail, rc);
  switch (rc) {
    case SQLITE_CONSTRAINT_PRIMARYKEY:
    case SQLITE_CONSTRAINT_UNIQUE:
      return absl::AlreadyExistsError(msg);
    case SQLITE_CONSTRAINT_FOREIGNKEY:
      return absl::NotFoundError(msg);
    default:
      break;
  }
  switch (rc & 0xff) {
    case SQLITE_CONSTRAINT:
    case SQLITE_MISMATCH:
    case SQLITE_TOOBIG:
    case SQLITE_RANGE:
      return absl::InvalidArgumentError(msg);
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return absl::UnavailableError(msg);
    case SQLITE_FULL:
      return absl::ResourceExhaustedError(msg);
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return absl::DataLossError(msg);
    case SQLITE_PERM:
    case SQLITE_READONLY:
    case SQLITE_AUTH:
      return absl::PermissionDeniedError(msg);
    default:
      return absl::InternalError(msg);
  }
}

// ---------------------------------------------------------------- Statement

Statement::Statement(Statement&& other) noexcept
    : stmt_(other.stmt_), db_(other.db_), bind_rc_(other.bind_rc_) {
  other.stmt_ = nullptr;
}

Statement::~Statement() {
  if (stmt_ == nullptr) return;
  // Reset releases the statement's read snapshot; clearing bindings keeps a
  // stale value from leaking into the next use of the cached statement.
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

Statement& Statement::Bind(int i, std::string_view v) {
  int rc = sqlite3_bind_text64(stmt_, i, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (bind_rc_ == SQLITE_OK) bind_rc_ = rc;
  return *this;
}

Statement& Statement::Bind(int i, int64_t v) {
  int rc = sqlite3_bind_int64(stmt_, i, v);
  if (bind_rc_ == SQLITE_OK) bind_rc_ = rc;
  return *this;
}

Statement& Statement::Bind(int i, double v) {
  int rc = sqlite3_bind_double(stmt_, i, v);
  if (bind_rc_ == SQLITE_OK) bind_rc_ = rc;
  return *this;
}

Statement& Statement::Bind(int i, const std::optional<double>& v) {
  return v.has_value() ? Bind(i, *v) : BindNull(i);
}

Statement& Statement::BindNull(int i) {
  int rc = sqlite3_bind_null(stmt_, i);
  if (bind_rc_ == SQLITE_OK) bind_rc_ = rc;
  return *this;
}

Statement& Statement::BindTextOrNull(int i, std::string_view v) {
  return v.empty() ? BindNull(i) : Bind(i, v);
}

absl::StatusOr<bool> Statement::Step() {
  if (bind_rc_ != SQLITE_OK) {
    return SqliteError(bind_rc_, db_, fmt::format("binding {}", sqlite3_sql(stmt_)));
  }
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  // Extended result codes are on, so rc already distinguishes e.g. UNIQUE from
  // FOREIGNKEY violations.
  return SqliteError(rc, db_, fmt::format("executing '{}'", sqlite3_sql(stmt_)));
}

absl::Status Statement::Run() {
  ASSIGN_OR_RETURN(bool row, Step());
  if (row) {
    return absl::InternalError(
        fmt::format("sqlite: '{}' returned a row where none was expected", sqlite3_sql(stmt_)));
  }
  return absl::OkStatus();
}

bool Statement::IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }

int64_t Statement::Int64(int col) const { return sqlite3_column_int64(stmt_, col); }

double Statement::Double(int col) const { return sqlite3_column_double(stmt_, col); }

std::optional<double> Statement::OptionalDouble(int col) const {
  if (IsNull(col)) return std::nullopt;
  return Double(col);
}

std::string Statement::Text(int col) const {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
  if (p == nullptr) return std::string();
  // Byte count after column_text so embedded NULs in payloads survive.
  return std::string(p, static_cast<size_t>(sqlite3_column_bytes(stmt_, col)));
}

// --------------------------------------------------------------- Connection

absl::StatusOr<std::unique_ptr<Connection>> Connection::Open(const std::string& path, int flags,
                                                             int busy_timeout_ms) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    absl::Status s = SqliteError(rc, db, fmt::format("opening {}", path));
    sqlite3_close_v2(db);  // open allocates a handle even on failure
    return s;
  }
  // Extended codes distinguish e.g. a UNIQUE from a FOREIGN KEY violation.
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, busy_timeout_ms);
  return std::unique_ptr<Connection>(new Connection(db));
}

Connection::~Connection() {
  for (auto& [sql, stmt] : cache_) sqlite3_finalize(stmt);
  sqlite3_close_v2(db_);
}

absl::StatusOr<Statement> Connection::Prepare(const std::string& sql) {
  auto it = cache_.find(sql);
  if (it != cache_.end()) return Statement(it->second, db_);
  sqlite3_stmt* stmt = nullptr;
  // PERSISTENT: these statements live for the connection's lifetime.
  int rc = sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size() + 1),
                              SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
  if (rc != SQLITE_OK) return SqliteError(rc, db_, fmt::format("preparing '{}'", sql));
  if (stmt == nullptr) {
    return absl::InternalError(fmt::format("sqlite: '{}' contains no statement", sql));
  }
  cache_.emplace(sql, stmt);
  return Statement(stmt, db_);
}

absl::Status Connection::Exec(const char* sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    // sqlite3_exec's message names the failing statement's problem; the code
    // mapping is SqliteError's.
    std::string msg = err != nullptr ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    absl::Status mapped = SqliteError(rc, nullptr, "exec");
    return absl::Status(mapped.code(), fmt::format("sqlite: {} (code {})", msg, rc));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> Connection::QueryText(const std::string& sql) {
  ASSIGN_OR_RETURN(Statement stmt, Prepare(sql));
  ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return absl::InternalError(fmt::format("sqlite: '{}' returned no row", sql));
  return stmt.Text(0);
}

// -------------------------------------------------------------- Transaction

absl::StatusOr<Transaction> Transaction::Begin(Connection* conn) {
  ASSIGN_OR_RETURN(Statement begin, conn->Prepare("BEGIN IMMEDIATE"));
  RETURN_IF_ERROR(begin.Run());
  return Transaction(conn);
}

Transaction::~Transaction() { Rollback(); }

absl::Status Transaction::Commit() {
  if (conn_ == nullptr) return absl::InternalError("sqlite: commit of a finished transaction");
  absl::Status s;
  {
    auto commit = conn_->Prepare("COMMIT");
    s = commit.ok() ? commit->Run() : commit.status();
  }
  if (!s.ok()) {
    // A failed COMMIT may leave the transaction open (e.g. SQLITE_BUSY);
    // roll back so the connection is usable and nothing half-done lingers.
    Rollback();
    return s;
  }
  conn_ = nullptr;
  return absl::OkStatus();
}

void Transaction::Rollback() {
  if (conn_ == nullptr) return;
  if (sqlite3_get_autocommit(conn_->db()) == 0) {
    // Not via the statement cache: rollback must work even when preparing
    // fails (e.g. out of memory), and errors here have nowhere to go.
    sqlite3_exec(conn_->db(), "ROLLBACK", nullptr, nullptr, nullptr);
  }
  conn_ = nullptr;
}

}  // namespace pkforge::storage::internal

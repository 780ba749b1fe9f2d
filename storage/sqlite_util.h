// Thin RAII layer over the SQLite C API, private to storage/.
//
// Connection owns one sqlite3* and a cache of prepared statements keyed by SQL
// text, so hot paths (AppendEvent, GetJob) prepare once per connection.
// Statement is a borrowed cached statement that resets itself and clears its
// bindings when it goes out of scope, so the next user always starts clean.
// Transaction is BEGIN IMMEDIATE ... COMMIT with ROLLBACK on destruction unless
// committed, so every early return through RETURN_IF_ERROR undoes the write.
//
// Threading: none of these types is thread-safe. A Connection is used by one
// thread at a time; storage serialises access (writer mutex, read pool).
// Connections are opened with SQLITE_OPEN_NOMUTEX because that external
// serialisation makes SQLite's own per-connection mutex redundant.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace pkforge::storage::internal {

// Maps a SQLite result code to a Status with the connection's error message:
// constraint violations become ALREADY_EXISTS / INVALID_ARGUMENT / NOT_FOUND,
// BUSY/LOCKED become UNAVAILABLE (retryable), FULL becomes RESOURCE_EXHAUSTED,
// CORRUPT/NOTADB become DATA_LOSS, everything else INTERNAL.
absl::Status SqliteError(int rc, sqlite3* db, std::string_view what);

class Statement {
 public:
  Statement(sqlite3_stmt* stmt, sqlite3* db) : stmt_(stmt), db_(db) {}
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&&) = delete;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  // Bind by 1-based index. Text is copied (SQLITE_TRANSIENT) because callers
  // often pass temporaries that die before Step().
  Statement& Bind(int i, std::string_view v);
  Statement& Bind(int i, const char* v) { return Bind(i, std::string_view(v)); }
  Statement& Bind(int i, const std::string& v) { return Bind(i, std::string_view(v)); }
  Statement& Bind(int i, int64_t v);
  Statement& Bind(int i, int32_t v) { return Bind(i, static_cast<int64_t>(v)); }
  Statement& Bind(int i, bool v) { return Bind(i, static_cast<int64_t>(v ? 1 : 0)); }
  Statement& Bind(int i, double v);
  Statement& Bind(int i, const std::optional<double>& v);
  Statement& BindNull(int i);
  // Empty strings become NULL: used for optional foreign keys (turn_id).
  Statement& BindTextOrNull(int i, std::string_view v);

  // true: a row is available; false: done.
  absl::StatusOr<bool> Step();
  // Steps a statement that returns no rows.
  absl::Status Run();

  bool IsNull(int col) const;
  int64_t Int64(int col) const;
  double Double(int col) const;
  std::optional<double> OptionalDouble(int col) const;
  std::string Text(int col) const;

 private:
  sqlite3_stmt* stmt_;
  sqlite3* db_;
  int bind_rc_ = SQLITE_OK;  // first bind failure, reported by Step()
};

class Connection {
 public:
  // `flags` are sqlite3_open_v2 flags; SQLITE_OPEN_NOMUTEX is always added.
  static absl::StatusOr<std::unique_ptr<Connection>> Open(const std::string& path, int flags,
                                                          int busy_timeout_ms);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  sqlite3* db() const { return db_; }

  // Returns the cached prepared statement for `sql` (one statement), preparing
  // it on first use.
  absl::StatusOr<Statement> Prepare(const std::string& sql);
  // Runs one or more statements that return no rows (not cached).
  absl::Status Exec(const char* sql);
  // Runs a pragma or query returning one row and one column, as text.
  absl::StatusOr<std::string> QueryText(const std::string& sql);

 private:
  explicit Connection(sqlite3* db) : db_(db) {}
  sqlite3* db_;
  std::unordered_map<std::string, sqlite3_stmt*> cache_;
};

// BEGIN IMMEDIATE takes the write lock up front: a deferred transaction that
// reads and then writes could fail with SQLITE_BUSY mid-way when another
// process writes, which busy_timeout cannot retry.
class Transaction {
 public:
  static absl::StatusOr<Transaction> Begin(Connection* conn);
  Transaction(Transaction&& other) noexcept : conn_(other.conn_) { other.conn_ = nullptr; }
  Transaction& operator=(Transaction&&) = delete;
  ~Transaction();

  absl::Status Commit();
  // Explicit rollback; the destructor does the same for uncommitted ones.
  void Rollback();

 private:
  explicit Transaction(Connection* conn) : conn_(conn) {}
  Connection* conn_;  // null once committed or rolled back
};

}  // namespace pkforge::storage::internal

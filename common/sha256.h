// SHA-256 through OpenSSL's libcrypto (EVP interface; never hand-written).
// Used for candidate deduplication and the compile-cache key.
//
// Thread safety: Sha256Hex is safe from any thread; a Sha256 object is not
// shared between threads.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace pkforge {

// Lower-case hex digest (64 characters) of `data`.
std::string Sha256Hex(std::string_view data);

// Incremental hasher: Update() any number of times, then HexDigest() once.
// Keyed hashes over several fields should call UpdateField(), which
// length-prefixes each field so ("ab","c") and ("a","bc") differ.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void Update(std::string_view data);
  void UpdateField(std::string_view field);
  std::string HexDigest();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pkforge

#pragma once
// The content-addressed compile cache: one file per key under a directory. The key is the
// SHA-256 of everything that decides NVRTC's output (compile_key); entries are written to a
// temporary file and renamed into place, so readers never see half an entry, and every entry ends
// with a SHA-256 of its contents, so a corrupt or truncated entry is a miss, never a crash.
// Safe to share between threads and between processes.
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compile.h"

namespace kbrl {

/// The content key of a compile: SHA-256 (hex) of a format tag, the NVRTC version, the arch, the
/// NVRTC options (compile() passes the candidate's in canonical, sorted form) except include
/// paths (-I...: a path says nothing about the headers, which come with the NVRTC version), and
/// the source.
std::string compile_key(std::string_view source, const std::vector<std::string>& nvrtc_options,
                        std::string_view arch, std::string_view nvrtc_version);

struct CompileCacheStats {
  int64_t hits = 0;
  int64_t misses = 0;
  int64_t corrupt = 0;         // entries found but unreadable (counted as misses too)
  int64_t stores = 0;
  int64_t store_failures = 0;  // entries that could not be written (the compile still succeeds)
};

class CompileCache {
 public:
  /// Creates `dir` if needed; throws ApiError if it cannot.
  explicit CompileCache(std::filesystem::path dir);

  /// The default directory: $KBRL_CACHE_DIR, else $XDG_CACHE_HOME/kbrl/compile, else
  /// ~/.cache/kbrl/compile, else <temp>/kbrl-compile-cache.
  static std::filesystem::path default_dir();

  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path entry_path(std::string_view key) const;

  /// The stored result for `key` (cache_hit and seconds left for the caller), or nullopt when
  /// there is none or it is corrupt. A lookup that is not `counted` leaves hits and misses alone
  /// (compile()'s second look, for a cached timeout).
  std::optional<CompileResult> load(std::string_view key, bool counted = true);
  /// Stores `result` under result.key, atomically. Returns false (and counts a store failure) if
  /// the file could not be written.
  bool store(const CompileResult& result);

  CompileCacheStats stats() const;

 private:
  std::filesystem::path dir_;
  std::atomic<int64_t> hits_{0}, misses_{0}, corrupt_{0}, stores_{0}, store_failures_{0};
};

/// The byte form of a cached result (exposed for tests): magic, fields, SHA-256 trailer.
std::string serialize_compile_result(const CompileResult& result);
std::optional<CompileResult> deserialize_compile_result(std::string_view bytes);

}  // namespace kbrl

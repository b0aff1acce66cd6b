#include "compile_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>

#include <harness/compile/byte_io.h>
#include <kbrl/check.h>
#include <kbrl/sha256.h>

namespace kbrl {
namespace {

constexpr std::string_view kMagic = "KBRLCC01";
constexpr std::string_view kKeyFormat = "kbrl-compile-key-v1";

std::optional<std::string> read_file(const std::filesystem::path& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string bytes;
  struct stat st {};
  if (fstat(fd, &st) == 0 && st.st_size > 0) bytes.reserve(static_cast<size_t>(st.st_size));
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    bytes.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  return bytes;
}

bool write_file(const std::filesystem::path& path, const std::string& bytes) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  bool ok = true;
  for (size_t done = 0; ok && done < bytes.size();) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<size_t>(n);
  }
  return close(fd) == 0 && ok;
}

void write_audit(detail::ByteWriter& w, const PrecisionAudit& audit) {
  w.u64(audit.sass_inspected ? 1 : 0);
  w.u64(audit.findings.size());
  for (const auto& f : audit.findings) {
    w.str(to_string(f.category));
    w.str(f.where);
    w.str(f.evidence);
    w.u64(static_cast<uint64_t>(f.line));
    w.u64(static_cast<uint64_t>(f.count));
  }
}

bool read_audit(detail::ByteReader& r, PrecisionAudit& audit) {
  audit.sass_inspected = r.u64() != 0;
  const uint64_t n = r.u64();
  for (uint64_t i = 0; r.ok() && i < n; ++i) {
    PrecisionFinding f;
    const std::string category = r.str();
    f.where = r.str();
    f.evidence = r.str();
    f.line = static_cast<int>(r.u64());
    f.count = static_cast<int>(r.u64());
    if (!r.ok()) return false;
    try {
      f.category = parse_precision_category(category);
    } catch (const InputError&) {
      return false;
    }
    audit.findings.push_back(std::move(f));
  }
  return r.ok();
}

}  // namespace

std::string compile_key(std::string_view source, const std::vector<std::string>& nvrtc_options,
                        std::string_view arch, std::string_view nvrtc_version) {
  Sha256 hash;
  hash.update_field(kKeyFormat).update_field(nvrtc_version).update_field(arch);
  std::vector<std::string_view> keyed;
  for (const auto& o : nvrtc_options)
    if (o.rfind("-I", 0) != 0) keyed.push_back(o);
  hash.update_field(std::to_string(keyed.size()));
  for (const auto o : keyed) hash.update_field(o);
  hash.update_field(source);
  return hash.hex_digest();
}

std::string serialize_compile_result(const CompileResult& result) {
  detail::ByteWriter w;
  w.raw(kMagic);
  w.str(result.key);
  static const CompiledModule kNone;  // a compile error's record: empty module fields, as before
  w.u64(result.ok() ? 1 : 0);
  w.str(result.error());
  w.str(result.log);
  w.strings(result.options);
  const CompiledModule& m = result.ok() ? result.module() : kNone;
  w.str(m.key);
  w.str(m.arch);
  w.str(m.ptx);
  w.str(m.cubin);
  w.str(m.log);
  w.strings(m.options);
  write_audit(w, m.audit);
  std::string bytes = w.take();
  const auto digest = Sha256().update(bytes).digest();
  bytes.append(reinterpret_cast<const char*>(digest.data()), digest.size());
  return bytes;
}

std::optional<CompileResult> deserialize_compile_result(std::string_view bytes) {
  if (bytes.size() < kMagic.size() + 32 || bytes.substr(0, kMagic.size()) != kMagic) return std::nullopt;
  const std::string_view body = bytes.substr(0, bytes.size() - 32);
  const auto digest = Sha256().update(body).digest();
  if (std::string_view(reinterpret_cast<const char*>(digest.data()), 32) != bytes.substr(body.size()))
    return std::nullopt;
  detail::ByteReader r(body.substr(kMagic.size()));
  CompileResult result;
  result.key = r.str();
  const bool ok = r.u64() != 0;
  std::string error = r.str();
  result.log = r.str();
  result.options = r.strings();
  CompiledModule m;
  m.key = r.str();
  m.arch = r.str();
  m.ptx = r.str();
  m.cubin = r.str();
  m.log = r.str();
  m.options = r.strings();
  if (!read_audit(r, m.audit) || !r.at_end()) return std::nullopt;
  if (ok) result.value = std::move(m);
  else result.value = CompileError{std::move(error)};
  return result;
}

CompileCache::CompileCache(std::filesystem::path dir) : dir_(std::move(dir)) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec || !std::filesystem::is_directory(dir_))
    throw ApiError("OS", "create_directories", fmt::format("cannot create compile cache directory '{}': {}",
                                                             dir_.string(), ec.message()),
                   __FILE__, __LINE__);
}

std::filesystem::path CompileCache::default_dir() {
  if (const char* dir = std::getenv("KBRL_CACHE_DIR"); dir && *dir) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::filesystem::path(xdg) / "kbrl" / "compile";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::filesystem::path(home) / ".cache" / "kbrl" / "compile";
  return std::filesystem::temp_directory_path() / "kbrl-compile-cache";
}

std::filesystem::path CompileCache::entry_path(std::string_view key) const {
  return dir_ / std::string(key.substr(0, 2)) / (std::string(key) + ".kbrlc");
}

std::optional<CompileResult> CompileCache::load(std::string_view key, bool counted) {
  const auto bytes = read_file(entry_path(key));
  if (!bytes) {
    misses_ += counted;
    return std::nullopt;
  }
  auto result = deserialize_compile_result(*bytes);
  if (!result || result->key != key) {
    ++corrupt_;
    misses_ += counted;
    return std::nullopt;
  }
  hits_ += counted;
  return result;
}

bool CompileCache::store(const CompileResult& result) {
  static std::atomic<uint64_t> counter{0};
  const auto path = entry_path(result.key);
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  const auto temp = path.parent_path() /
                    fmt::format(".tmp-{}-{}-{}", getpid(),
                                std::hash<std::thread::id>()(std::this_thread::get_id()), ++counter);
  if (!ec && write_file(temp, serialize_compile_result(result))) {
    std::filesystem::rename(temp, path, ec);
    if (!ec) {
      ++stores_;
      return true;
    }
  }
  std::filesystem::remove(temp, ec);
  ++store_failures_;
  return false;
}

CompileCacheStats CompileCache::stats() const {
  return {hits_.load(), misses_.load(), corrupt_.load(), stores_.load(), store_failures_.load()};
}

}  // namespace kbrl

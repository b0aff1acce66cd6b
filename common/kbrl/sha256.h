#pragma once
// SHA-256 (FIPS 180-4): the compile cache's content keys and checksums, the rollout log's record
// keys, the generator tests' digests. A general utility, so it lives in common (kbrl::common).
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace kbrl {

/// Incremental SHA-256. `update` any number of times, then `digest` once.
class Sha256 {
 public:
  Sha256();
  Sha256& update(std::string_view bytes);
  /// Adds `bytes` preceded by its length, so that a sequence of fields hashes unambiguously.
  Sha256& update_field(std::string_view bytes);
  std::array<uint8_t, 32> digest();
  std::string hex_digest();  // 64 lower-case hex digits

 private:
  void block(const uint8_t* p);
  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t length_ = 0;  // bytes hashed so far
};

/// Hex SHA-256 of `bytes`.
std::string sha256_hex(std::string_view bytes);

}  // namespace kbrl

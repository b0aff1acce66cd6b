#pragma once
// Internal: length-prefixed binary fields, the format of compile cache entries and of the compile
// child's reply over its pipe. A reader never throws: a short or malformed input makes ok() false.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace kbrl::detail {

class ByteWriter {
 public:
  void u64(uint64_t v) {
    char b[8];
    for (int i = 0; i < 8; ++i) b[i] = static_cast<char>(v >> (8 * i));
    out_.append(b, 8);
  }
  void str(std::string_view s) {
    u64(s.size());
    out_.append(s);
  }
  void strings(const std::vector<std::string>& v) {
    u64(v.size());
    for (const auto& s : v) str(s);
  }
  void raw(std::string_view s) { out_.append(s); }
  const std::string& bytes() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class ByteReader {
 public:
  explicit ByteReader(std::string_view in) : in_(in) {}
  uint64_t u64() {
    if (!ok_ || in_.size() - pos_ < 8) return fail<uint64_t>();
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t{static_cast<uint8_t>(in_[pos_ + i])} << (8 * i);
    pos_ += 8;
    return v;
  }
  std::string str() {
    const uint64_t n = u64();
    if (!ok_ || in_.size() - pos_ < n) return fail<std::string>();
    std::string s(in_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  std::vector<std::string> strings() {
    const uint64_t n = u64();
    std::vector<std::string> v;
    for (uint64_t i = 0; ok_ && i < n; ++i) v.push_back(str());
    return v;
  }
  bool ok() const { return ok_; }
  bool at_end() const { return ok_ && pos_ == in_.size(); }
  size_t position() const { return pos_; }

 private:
  template <typename T>
  T fail() {
    ok_ = false;
    return T{};
  }
  std::string_view in_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace kbrl::detail

#pragma once
// A reader of safetensors files (Hugging Face's weight format): an 8-byte little-endian header
// length, a JSON header {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {...}}
// and the data, offsets counted from the end of the header. The header is checked whole when the
// file is opened (lengths, offsets inside the file, shape against byte count, known dtypes), so a
// truncated or hostile file is an InputError naming the file and the tensor, never a crash or a
// huge allocation. Tensors are read one at a time, converted to float32 (F32, F16, BF16).
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "model_file.h"

namespace kbrl::lm {

struct SafetensorsEntry {
  std::string dtype;  // as the file spells it: F32, F16, BF16, I64, ...
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // absolute byte offsets in the file
  uint64_t end = 0;
};

class SafetensorsFile {
 public:
  /// Reads and checks the header; InputError naming the file (and tensor) when it is malformed.
  explicit SafetensorsFile(std::filesystem::path file);

  const std::filesystem::path& path() const { return path_; }
  const std::map<std::string, SafetensorsEntry>& tensors() const { return tensors_; }
  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  /// One tensor as float32. InputError naming the file and tensor when it is absent, of a dtype
  /// other than F32/F16/BF16, or unreadable.
  WeightArray read(const std::string& name) const;

 private:
  std::filesystem::path path_;
  std::map<std::string, SafetensorsEntry> tensors_;
};

}  // namespace kbrl::lm

#pragma once
// A reader of GGUF files (llama.cpp's model format, version 2 and 3): the metadata key/values, the
// tensor directory, and each tensor dequantized to float32. Supported tensor types: F32, F16, BF16,
// Q8_0, Q4_0, Q4_1 (blocks of 32 values; the layouts of ggml's ggml-common.h). The file is read
// with bounds checks everywhere: a truncated or hostile file is an InputError naming the file and
// what is wrong, never a crash. No libtorch here.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace kbrl::lm {

/// One metadata value. Integers of every width read as int64 (uint64 above INT64_MAX is refused),
/// floats as double; arrays of strings or of numbers as vectors.
using GgufValue = std::variant<int64_t, double, bool, std::string, std::vector<int64_t>,
                               std::vector<double>, std::vector<std::string>>;

enum class GgufType : uint32_t { f32 = 0, f16 = 1, q4_0 = 2, q4_1 = 3, q8_0 = 8, bf16 = 30 };

struct GgufTensorInfo {
  std::string name;
  /// ggml order: dims[0] is the fastest-varying (the row length). A torch shape is the reverse.
  std::vector<int64_t> dims;
  uint32_t type = 0;  // GgufType for the supported ones
  uint64_t offset = 0;  // from the start of the data section
  int64_t elements() const;
};

class GgufFile {
 public:
  /// Reads the header, metadata and tensor directory (not the tensor data). InputError for a file
  /// that is missing, not GGUF, of another version, or malformed.
  explicit GgufFile(const std::filesystem::path& file);

  const std::filesystem::path& path() const { return path_; }
  const std::map<std::string, GgufValue>& metadata() const { return metadata_; }
  bool has(const std::string& key) const { return metadata_.count(key) != 0; }
  /// Typed accessors: InputError naming the key when it is absent or of another type.
  int64_t integer(const std::string& key) const;
  int64_t integer(const std::string& key, int64_t fallback) const;
  double number(const std::string& key) const;  // a float or an integer
  double number(const std::string& key, double fallback) const;
  bool boolean(const std::string& key, bool fallback) const;
  const std::string& string(const std::string& key) const;
  std::string string(const std::string& key, const std::string& fallback) const;
  const std::vector<std::string>& strings(const std::string& key) const;
  const std::vector<int64_t>& integers(const std::string& key) const;

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(const std::string& name) const;  // nullptr when absent
  /// The tensor's values as float32, in ggml order (row-major for the reversed dims). InputError for
  /// an unsupported type (naming it) or data outside the file.
  std::vector<float> dequantize(const GgufTensorInfo& tensor) const;

 private:
  std::filesystem::path path_;
  std::map<std::string, GgufValue> metadata_;
  std::vector<GgufTensorInfo> tensors_;
  uint64_t metadata_begin_ = 0, metadata_end_ = 0, metadata_count_ = 0;  // the key/value section, as stored
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  friend void write_gguf_f32(const GgufFile&, const std::filesystem::path&);
  uint64_t file_size_ = 0;
};

/// Writes `in` as a GGUF file whose tensors are all float32 (the dequantized values), the metadata
/// copied byte for byte: the same model without quantization, for llama.cpp to compute in float32
/// (the parity test's oracle). The file is written to `out`.part and renamed when complete.
void write_gguf_f32(const GgufFile& in, const std::filesystem::path& out);

/// The name of a ggml tensor type ("q4_1", "f16", ...; "type N" for others).
std::string gguf_type_name(uint32_t type);

}  // namespace kbrl::lm

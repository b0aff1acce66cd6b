// safetensors reading with bounds checks everywhere; see safetensors.h.
#include "safetensors.h"

#include <kbrl/error.h>

#include <bit>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <system_error>

#include <nlohmann/json.hpp>

#include "half.h"

namespace kbrl::lm {
namespace {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; this reader copies it as is");

using nlohmann::json;

// The safetensors library itself refuses headers above 100 MB; so does this reader, which keeps a
// hostile length from allocating gigabytes.
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

/// Bytes per element of the dtypes the safetensors format defines; 0 for an unknown name.
uint64_t dtype_bytes(const std::string& dtype) {
  if (dtype == "F64" || dtype == "I64" || dtype == "U64") return 8;
  if (dtype == "F32" || dtype == "I32" || dtype == "U32") return 4;
  if (dtype == "F16" || dtype == "BF16" || dtype == "I16" || dtype == "U16") return 2;
  if (dtype == "I8" || dtype == "U8" || dtype == "BOOL" || dtype == "F8_E4M3" ||
      dtype == "F8_E5M2") {
    return 1;
  }
  return 0;
}

/// A non-negative JSON integer as uint64, or nullopt.
std::optional<uint64_t> as_unsigned(const json& value) {
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (value.is_number_integer() && value.get<int64_t>() >= 0) {
    return static_cast<uint64_t>(value.get<int64_t>());
  }
  return std::nullopt;
}

SafetensorsEntry parse_entry(const std::filesystem::path& file, const std::string& name,
                             const json& info, uint64_t data_start, uint64_t file_size) {
  const auto fail = [&](const std::string& what) {
    return InputError(fmt::format("{}: tensor '{}': {}", file.string(), name, what));
  };
  if (!info.is_object()) throw fail("header entry is not an object");
  const auto dtype = info.find("dtype");
  const auto shape = info.find("shape");
  const auto offsets = info.find("data_offsets");
  if (dtype == info.end() || !dtype->is_string()) throw fail("no \"dtype\" string");
  if (shape == info.end() || !shape->is_array()) throw fail("no \"shape\" array");
  if (offsets == info.end() || !offsets->is_array() || offsets->size() != 2) {
    throw fail("no \"data_offsets\" pair [begin, end]");
  }
  SafetensorsEntry entry;
  entry.dtype = dtype->get<std::string>();
  const uint64_t element_bytes = dtype_bytes(entry.dtype);
  if (element_bytes == 0) throw fail(fmt::format("unknown dtype '{}'", entry.dtype));

  uint64_t elements = 1;
  for (const json& dim : *shape) {
    const std::optional<uint64_t> size = as_unsigned(dim);
    if (!size || *size > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      throw fail(fmt::format("shape {} holds a value that is not a dimension", shape->dump()));
    }
    if (*size != 0 && elements > std::numeric_limits<uint64_t>::max() / *size) {
      throw fail(fmt::format("shape {} is too large", shape->dump()));
    }
    elements *= *size;
    entry.shape.push_back(static_cast<int64_t>(*size));
  }
  const std::optional<uint64_t> begin = as_unsigned((*offsets)[0]);
  const std::optional<uint64_t> end = as_unsigned((*offsets)[1]);
  if (!begin || !end || *begin > *end) {
    throw fail(fmt::format("data_offsets {} are not an ordered pair of byte offsets",
                           offsets->dump()));
  }
  const uint64_t data_size = file_size - data_start;
  if (*end > data_size) {
    throw fail(fmt::format("data_offsets {} run past the end of the data ({} bytes): the file is "
                           "truncated or corrupt",
                           offsets->dump(), data_size));
  }
  if (elements > std::numeric_limits<uint64_t>::max() / element_bytes ||
      elements * element_bytes != *end - *begin) {
    throw fail(fmt::format("shape {} of {} needs {} bytes but data_offsets {} hold {}",
                           shape->dump(), entry.dtype, elements * element_bytes, offsets->dump(),
                           *end - *begin));
  }
  entry.begin = data_start + *begin;
  entry.end = data_start + *end;
  return entry;
}

uint64_t read_le_u64(const unsigned char* bytes) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | bytes[i];
  return value;
}

}  // namespace

SafetensorsFile::SafetensorsFile(std::filesystem::path file) : path_(std::move(file)) {
  std::error_code error;
  const uint64_t file_size = std::filesystem::file_size(path_, error);
  KBRL_CHECK_INPUT(!error, "{}: cannot read the safetensors file: {}", path_.string(),
                   error.message());
  std::ifstream in(path_, std::ios::binary);
  KBRL_CHECK_INPUT(in.good(), "{}: cannot open the safetensors file", path_.string());
  KBRL_CHECK_INPUT(file_size >= 8, "{}: {} bytes, too short for a safetensors header length",
                   path_.string(), file_size);
  unsigned char length_bytes[8];
  in.read(reinterpret_cast<char*>(length_bytes), 8);
  KBRL_CHECK_INPUT(in.good(), "{}: cannot read the header length", path_.string());
  const uint64_t header_bytes = read_le_u64(length_bytes);
  KBRL_CHECK_INPUT(header_bytes <= file_size - 8,
                   "{}: header length {} runs past the end of the file ({} bytes): the file is "
                   "truncated or not a safetensors file",
                   path_.string(), header_bytes, file_size);
  KBRL_CHECK_INPUT(header_bytes <= kMaxHeaderBytes,
                   "{}: header length {} is above the 100 MB limit", path_.string(), header_bytes);
  std::string header(header_bytes, '\0');
  in.read(header.data(), static_cast<std::streamsize>(header_bytes));
  KBRL_CHECK_INPUT(in.good(), "{}: cannot read the {}-byte header", path_.string(), header_bytes);

  json parsed;
  try {
    parsed = json::parse(header);
  } catch (const json::parse_error& e) {
    throw InputError(fmt::format("{}: the header is not JSON ({}): the file is corrupt or not a "
                                 "safetensors file",
                                 path_.string(), e.what()));
  }
  KBRL_CHECK_INPUT(parsed.is_object(), "{}: the header is not a JSON object", path_.string());
  const uint64_t data_start = 8 + header_bytes;
  for (const auto& [name, info] : parsed.items()) {
    if (name == "__metadata__") continue;  // free-form string map
    tensors_.emplace(name, parse_entry(path_, name, info, data_start, file_size));
  }
}

WeightArray SafetensorsFile::read(const std::string& name) const {
  const auto found = tensors_.find(name);
  KBRL_CHECK_INPUT(found != tensors_.end(), "{}: no tensor '{}'", path_.string(), name);
  const SafetensorsEntry& entry = found->second;
  KBRL_CHECK_INPUT(entry.dtype == "F32" || entry.dtype == "F16" || entry.dtype == "BF16",
                   "{}: tensor '{}' has dtype {}; kbrl reads F32, F16 and BF16 weights (convert "
                   "the model to one of those)",
                   path_.string(), name, entry.dtype);
  const uint64_t bytes = entry.end - entry.begin;
  const uint64_t element_bytes = dtype_bytes(entry.dtype);
  std::vector<char> raw(bytes);
  std::ifstream in(path_, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(entry.begin));
  in.read(raw.data(), static_cast<std::streamsize>(bytes));
  KBRL_CHECK_INPUT(in.good() || bytes == 0, "{}: cannot read the {} bytes of tensor '{}'",
                   path_.string(), bytes, name);

  WeightArray weight;
  weight.shape = entry.shape;
  weight.values.resize(bytes / element_bytes);
  if (entry.dtype == "F32") {
    if (bytes != 0) std::memcpy(weight.values.data(), raw.data(), bytes);
    return weight;
  }
  const bool is_f16 = entry.dtype == "F16";
  for (size_t i = 0; i < weight.values.size(); ++i) {
    uint16_t bits = 0;
    std::memcpy(&bits, raw.data() + 2 * i, 2);
    weight.values[i] = is_f16 ? float_from_f16(bits) : float_from_bf16(bits);
  }
  return weight;
}

}  // namespace kbrl::lm

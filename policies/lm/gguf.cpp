#include "gguf.h"

#include <cstring>
#include <fstream>
#include <limits>

#include <kbrl/error.h>

#include "half.h"

namespace kbrl::lm {
namespace {

constexpr uint64_t kMaxString = 1ull << 26;     // 64 MiB: no real key, value or template is larger
constexpr uint64_t kMaxArray = 1ull << 26;      // elements (a vocabulary has ~10^5)
constexpr uint64_t kMaxCount = 1ull << 20;      // tensors or keys
constexpr int64_t kBlock = 32;                  // values per quantized block

// Reads the header through a stream, checking every read against the file's size.
class Reader {
 public:
  Reader(const std::filesystem::path& path, uint64_t size) : path_(path), size_(size), in_(path, std::ios::binary) {
    KBRL_CHECK_INPUT(in_.good(), "cannot open model file {}", path.string());
  }
  void bytes(void* out, uint64_t n) {
    KBRL_CHECK_INPUT(n <= size_ - pos_, "{}: truncated GGUF file (needs {} bytes at offset {}, the file has {})",
                     path_.string(), n, pos_, size_);
    in_.read(static_cast<char*>(out), static_cast<std::streamsize>(n));
    KBRL_CHECK_INPUT(in_.good(), "{}: read error at offset {}", path_.string(), pos_);
    pos_ += n;
  }
  template <class T>
  T scalar() {
    T v;
    bytes(&v, sizeof v);
    return v;
  }
  std::string string() {
    const uint64_t n = scalar<uint64_t>();
    KBRL_CHECK_INPUT(n <= kMaxString, "{}: a string of {} bytes at offset {} (malformed GGUF)", path_.string(), n, pos_);
    std::string s(n, '\0');
    bytes(s.data(), n);
    return s;
  }
  uint64_t pos() const { return pos_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  uint64_t size_ = 0;
  uint64_t pos_ = 0;
  std::ifstream in_;
};

enum : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7, kString = 8, kArray = 9,
  kU64 = 10, kI64 = 11, kF64 = 12,
};

bool is_integer_type(uint32_t t) { return t <= kI32 || t == kU64 || t == kI64; }

int64_t read_integer(Reader& r, uint32_t t) {
  switch (t) {
    case kU8: return r.scalar<uint8_t>();
    case kI8: return r.scalar<int8_t>();
    case kU16: return r.scalar<uint16_t>();
    case kI16: return r.scalar<int16_t>();
    case kU32: return r.scalar<uint32_t>();
    case kI32: return r.scalar<int32_t>();
    case kI64: return r.scalar<int64_t>();
    case kU64: {
      const uint64_t v = r.scalar<uint64_t>();
      KBRL_CHECK_INPUT(v <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()),
                       "{}: an integer value {} out of range", r.path().string(), v);
      return static_cast<int64_t>(v);
    }
  }
  throw InternalError("read_integer: not an integer type");
}

GgufValue read_value(Reader& r, uint32_t t, const std::string& key) {
  if (is_integer_type(t)) return read_integer(r, t);
  switch (t) {
    case kF32: return static_cast<double>(r.scalar<float>());
    case kF64: return r.scalar<double>();
    case kBool: return r.scalar<uint8_t>() != 0;
    case kString: return r.string();
    case kArray: {
      const uint32_t et = r.scalar<uint32_t>();
      const uint64_t n = r.scalar<uint64_t>();
      KBRL_CHECK_INPUT(n <= kMaxArray, "{}: key {} is an array of {} elements (malformed GGUF)", r.path().string(),
                       key, n);
      if (et == kString) {
        std::vector<std::string> v(n);
        for (auto& s : v) s = r.string();
        return v;
      }
      if (is_integer_type(et) || et == kBool) {
        std::vector<int64_t> v(n);
        for (auto& x : v) x = et == kBool ? int64_t{r.scalar<uint8_t>() != 0} : read_integer(r, et);
        return v;
      }
      if (et == kF32 || et == kF64) {
        std::vector<double> v(n);
        for (auto& x : v) x = et == kF32 ? r.scalar<float>() : r.scalar<double>();
        return v;
      }
      throw InputError(fmt::format("{}: key {} is an array of type {} (unsupported)", r.path().string(), key, et));
    }
  }
  throw InputError(fmt::format("{}: key {} has value type {} (not a GGUF type)", r.path().string(), key, t));
}

// Bytes per block of 32 values, 0 for the unquantized types.
uint64_t block_bytes(uint32_t type) {
  switch (static_cast<GgufType>(type)) {
    case GgufType::q4_0: return 18;
    case GgufType::q4_1: return 20;
    case GgufType::q8_0: return 34;
    default: return 0;
  }
}

uint64_t element_bytes(uint32_t type) {
  switch (static_cast<GgufType>(type)) {
    case GgufType::f32: return 4;
    case GgufType::f16:
    case GgufType::bf16: return 2;
    default: return 0;
  }
}

uint16_t u16_at(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

void dequantize_blocks(uint32_t type, const uint8_t* in, int64_t blocks, float* out) {
  for (int64_t b = 0; b < blocks; ++b, out += kBlock) {
    switch (static_cast<GgufType>(type)) {
      case GgufType::q4_0: {  // {f16 d; u8 qs[16]}: low nibbles are values 0..15, high ones 16..31
        const uint8_t* p = in + b * 18;
        const float d = float_from_f16(u16_at(p));
        for (int j = 0; j < 16; ++j) {
          out[j] = static_cast<float>((p[2 + j] & 0x0F) - 8) * d;
          out[j + 16] = static_cast<float>((p[2 + j] >> 4) - 8) * d;
        }
        break;
      }
      case GgufType::q4_1: {  // {f16 d; f16 m; u8 qs[16]}: x = q * d + m
        const uint8_t* p = in + b * 20;
        const float d = float_from_f16(u16_at(p));
        const float m = float_from_f16(u16_at(p + 2));
        for (int j = 0; j < 16; ++j) {
          out[j] = static_cast<float>(p[4 + j] & 0x0F) * d + m;
          out[j + 16] = static_cast<float>(p[4 + j] >> 4) * d + m;
        }
        break;
      }
      case GgufType::q8_0: {  // {f16 d; i8 qs[32]}
        const uint8_t* p = in + b * 34;
        const float d = float_from_f16(u16_at(p));
        for (int j = 0; j < 32; ++j) out[j] = static_cast<float>(static_cast<int8_t>(p[2 + j])) * d;
        break;
      }
      default: throw InternalError("dequantize_blocks: not a block type");
    }
  }
}

}  // namespace

int64_t GgufTensorInfo::elements() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::string gguf_type_name(uint32_t type) {
  switch (static_cast<GgufType>(type)) {
    case GgufType::f32: return "f32";
    case GgufType::f16: return "f16";
    case GgufType::bf16: return "bf16";
    case GgufType::q4_0: return "q4_0";
    case GgufType::q4_1: return "q4_1";
    case GgufType::q8_0: return "q8_0";
  }
  return fmt::format("type {}", type);
}

GgufFile::GgufFile(const std::filesystem::path& file) : path_(file) {
  std::error_code ec;
  KBRL_CHECK_INPUT(std::filesystem::is_regular_file(file, ec), "model file {} does not exist (or is not a file)",
                   file.string());
  file_size_ = std::filesystem::file_size(file);
  Reader r(file, file_size_);
  char magic[4];
  r.bytes(magic, 4);
  KBRL_CHECK_INPUT(std::memcmp(magic, "GGUF", 4) == 0, "{} is not a GGUF file (no GGUF magic)", file.string());
  const uint32_t version = r.scalar<uint32_t>();
  KBRL_CHECK_INPUT(version == 2 || version == 3, "{}: GGUF version {} (kbrl reads versions 2 and 3)", file.string(),
                   version);
  const uint64_t n_tensors = r.scalar<uint64_t>();
  const uint64_t n_kv = r.scalar<uint64_t>();
  KBRL_CHECK_INPUT(n_tensors <= kMaxCount && n_kv <= kMaxCount, "{}: {} tensors and {} keys (malformed GGUF)",
                   file.string(), n_tensors, n_kv);
  metadata_begin_ = r.pos();
  metadata_count_ = n_kv;
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = r.string();
    const uint32_t type = r.scalar<uint32_t>();
    metadata_[key] = read_value(r, type, key);
  }
  metadata_end_ = r.pos();
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensorInfo t;
    t.name = r.string();
    const uint32_t n_dims = r.scalar<uint32_t>();
    KBRL_CHECK_INPUT(n_dims >= 1 && n_dims <= 4, "{}: tensor {} has {} dimensions", file.string(), t.name, n_dims);
    int64_t elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const uint64_t dim = r.scalar<uint64_t>();
      KBRL_CHECK_INPUT(dim >= 1 && dim <= (1ull << 32), "{}: tensor {} has a dimension of {}", file.string(), t.name,
                       dim);
      elements *= static_cast<int64_t>(dim);
      KBRL_CHECK_INPUT(elements <= (int64_t{1} << 40), "{}: tensor {} is too large", file.string(), t.name);
      t.dims.push_back(static_cast<int64_t>(dim));
    }
    t.type = r.scalar<uint32_t>();
    t.offset = r.scalar<uint64_t>();
    tensors_.push_back(std::move(t));
  }
  const uint64_t alignment = static_cast<uint64_t>(integer("general.alignment", 32));
  KBRL_CHECK_INPUT(alignment > 0 && alignment <= 4096 && (alignment & (alignment - 1)) == 0,
                   "{}: general.alignment {} is not a power of two", file.string(), alignment);
  alignment_ = alignment;
  data_offset_ = (r.pos() + alignment - 1) / alignment * alignment;
}

const GgufTensorInfo* GgufFile::find_tensor(const std::string& name) const {
  for (const auto& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

std::vector<float> GgufFile::dequantize(const GgufTensorInfo& t) const {
  const int64_t n = t.elements();
  uint64_t bytes = 0;
  if (const uint64_t eb = element_bytes(t.type)) {
    bytes = static_cast<uint64_t>(n) * eb;
  } else if (const uint64_t bb = block_bytes(t.type)) {
    KBRL_CHECK_INPUT(t.dims[0] % kBlock == 0, "{}: tensor {} of type {} has rows of {} values (not a multiple of 32)",
                     path_.string(), t.name, gguf_type_name(t.type), t.dims[0]);
    bytes = static_cast<uint64_t>(n / kBlock) * bb;
  } else {
    throw InputError(fmt::format("{}: tensor {} has type {}; kbrl reads f32, f16, bf16, q8_0, q4_0 and q4_1 "
                                 "(requantize the model to one of them, e.g. with llama-quantize)",
                                 path_.string(), t.name, gguf_type_name(t.type)));
  }
  const uint64_t begin = data_offset_ + t.offset;
  KBRL_CHECK_INPUT(t.offset <= file_size_ && begin <= file_size_ && bytes <= file_size_ - begin,
                   "{}: tensor {} lies outside the file (offset {}, {} bytes, file {} bytes)", path_.string(), t.name,
                   begin, bytes, file_size_);
  std::vector<uint8_t> raw(bytes);
  std::ifstream in(path_, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(begin));
  in.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(bytes));
  KBRL_CHECK_INPUT(in.good(), "{}: could not read tensor {}", path_.string(), t.name);
  std::vector<float> out(static_cast<size_t>(n));
  switch (static_cast<GgufType>(t.type)) {
    case GgufType::f32: std::memcpy(out.data(), raw.data(), bytes); break;
    case GgufType::f16:
      for (int64_t i = 0; i < n; ++i) out[i] = float_from_f16(u16_at(raw.data() + 2 * i));
      break;
    case GgufType::bf16:
      for (int64_t i = 0; i < n; ++i) out[i] = float_from_bf16(u16_at(raw.data() + 2 * i));
      break;
    default: dequantize_blocks(t.type, raw.data(), n / kBlock, out.data());
  }
  return out;
}

void write_gguf_f32(const GgufFile& in, const std::filesystem::path& out) {
  std::string header;
  auto put = [&](const void* p, size_t n) { header.append(static_cast<const char*>(p), n); };
  auto put64 = [&](uint64_t v) { put(&v, 8); };
  auto put32 = [&](uint32_t v) { put(&v, 4); };
  put("GGUF", 4);
  put32(3);
  put64(in.tensors_.size());
  put64(in.metadata_count_);
  {
    std::ifstream src(in.path_, std::ios::binary);
    src.seekg(static_cast<std::streamoff>(in.metadata_begin_));
    std::string kv(in.metadata_end_ - in.metadata_begin_, '\0');
    src.read(kv.data(), static_cast<std::streamsize>(kv.size()));
    KBRL_CHECK_INPUT(src.good(), "{}: could not read its metadata", in.path_.string());
    header += kv;
  }
  const uint64_t a = in.alignment_;
  auto padded = [a](uint64_t n) { return (n + a - 1) / a * a; };
  uint64_t offset = 0;
  for (const GgufTensorInfo& t : in.tensors_) {
    put64(t.name.size());
    put(t.name.data(), t.name.size());
    put32(static_cast<uint32_t>(t.dims.size()));
    for (int64_t d : t.dims) put64(static_cast<uint64_t>(d));
    put32(static_cast<uint32_t>(GgufType::f32));
    put64(offset);
    offset = padded(offset + static_cast<uint64_t>(t.elements()) * 4);
  }
  header.resize(padded(header.size()), '\0');
  const std::filesystem::path part = out.string() + ".part";
  std::ofstream dst(part, std::ios::binary | std::ios::trunc);
  KBRL_CHECK_INPUT(dst.good(), "cannot write {}", part.string());
  dst.write(header.data(), static_cast<std::streamsize>(header.size()));
  for (const GgufTensorInfo& t : in.tensors_) {
    const std::vector<float> v = in.dequantize(t);
    const uint64_t bytes = v.size() * 4;
    dst.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(bytes));
    const std::string pad(padded(bytes) - bytes, '\0');
    dst.write(pad.data(), static_cast<std::streamsize>(pad.size()));
  }
  dst.close();
  KBRL_CHECK_INPUT(dst.good(), "writing {} failed (disk full?)", part.string());
  std::filesystem::rename(part, out);
}

// ---- typed metadata ----

namespace {
template <class T>
const T& typed(const std::map<std::string, GgufValue>& m, const std::filesystem::path& path, const std::string& key,
               const char* what) {
  auto it = m.find(key);
  KBRL_CHECK_INPUT(it != m.end(), "{}: the GGUF metadata has no key {}", path.string(), key);
  const T* v = std::get_if<T>(&it->second);
  KBRL_CHECK_INPUT(v != nullptr, "{}: GGUF key {} is not {}", path.string(), key, what);
  return *v;
}
}  // namespace

int64_t GgufFile::integer(const std::string& key) const {
  return typed<int64_t>(metadata_, path_, key, "an integer");
}
int64_t GgufFile::integer(const std::string& key, int64_t fallback) const {
  return has(key) ? integer(key) : fallback;
}
double GgufFile::number(const std::string& key) const {
  auto it = metadata_.find(key);
  if (it != metadata_.end())
    if (const int64_t* i = std::get_if<int64_t>(&it->second)) return static_cast<double>(*i);
  return typed<double>(metadata_, path_, key, "a number");
}
double GgufFile::number(const std::string& key, double fallback) const { return has(key) ? number(key) : fallback; }
bool GgufFile::boolean(const std::string& key, bool fallback) const {
  return has(key) ? typed<bool>(metadata_, path_, key, "a boolean") : fallback;
}
const std::string& GgufFile::string(const std::string& key) const {
  return typed<std::string>(metadata_, path_, key, "a string");
}
std::string GgufFile::string(const std::string& key, const std::string& fallback) const {
  return has(key) ? string(key) : fallback;
}
const std::vector<std::string>& GgufFile::strings(const std::string& key) const {
  return typed<std::vector<std::string>>(metadata_, path_, key, "an array of strings");
}
const std::vector<int64_t>& GgufFile::integers(const std::string& key) const {
  return typed<std::vector<int64_t>>(metadata_, path_, key, "an array of integers");
}

}  // namespace kbrl::lm

#include "kernel_params.h"

#include <cstdint>

#include <fmt/format.h>
#include <kbrl/error.h>

namespace kbrl {
namespace {

constexpr uint16_t kMachineCuda = 190;         // EM_CUDA
constexpr uint32_t kSectionSymbols = 2;        // SHT_SYMTAB
constexpr uint8_t kSymbolFunction = 2;         // STT_FUNC
constexpr uint8_t kSymbolEntry = 0x10;         // st_other bit of a kernel (cuobjdump: ENTRY)
constexpr uint8_t kAttributeParamInfo = 0x17;  // EIATTR_KPARAM_INFO
constexpr std::string_view kInfoPrefix = ".nv.info.";

[[noreturn]] void malformed(const std::string& what) {
  throw InputError("malformed cubin: " + what);
}

/// Little-endian fields of a byte range, every read bounds-checked.
struct Bytes {
  std::string_view data;

  uint64_t read(uint64_t offset, int width) const {
    if (offset > data.size() || data.size() - offset < static_cast<uint64_t>(width))
      malformed(fmt::format("a {}-byte field at offset {} lies past the end ({} bytes)", width, offset,
                            data.size()));
    uint64_t v = 0;
    for (int i = 0; i < width; ++i) v |= uint64_t{static_cast<uint8_t>(data[offset + i])} << (8 * i);
    return v;
  }
  uint8_t u8(uint64_t offset) const { return static_cast<uint8_t>(read(offset, 1)); }
  uint16_t u16(uint64_t offset) const { return static_cast<uint16_t>(read(offset, 2)); }
  uint32_t u32(uint64_t offset) const { return static_cast<uint32_t>(read(offset, 4)); }
  uint64_t u64(uint64_t offset) const { return read(offset, 8); }
};

struct Section {
  std::string name;
  uint32_t type = 0;
  uint32_t link = 0;
  uint64_t entry_size = 0;
  std::string_view data;
};

class Elf {
 public:
  explicit Elf(std::string_view image) : image_{image} {
    if (image.size() < 64 || image.substr(0, 4) != "\x7f" "ELF")
      malformed(fmt::format("not an ELF image ({} bytes)", image.size()));
    if (image_.u8(4) != 2 || image_.u8(5) != 1) malformed("not a 64-bit little-endian ELF");
    if (image_.u16(18) != kMachineCuda)
      malformed(fmt::format("machine {} is not CUDA ({})", image_.u16(18), kMachineCuda));
    const uint64_t table = image_.u64(40);
    const uint16_t header_size = image_.u16(58);
    uint64_t count = image_.u16(60);
    uint32_t names_index = image_.u16(62);
    if (header_size != 64)
      malformed(fmt::format("section headers of {} bytes (64 expected)", header_size));
    if (table == 0) malformed("no section table");
    if (count == 0) count = image_.u64(table + 32);  // extended numbering: section 0's sh_size
    if (names_index == 0xffff) names_index = image_.u32(table + 40);  // SHN_XINDEX: its sh_link
    if (count > (image.size() - std::min<uint64_t>(table, image.size())) / 64)
      malformed(fmt::format("{} section headers at offset {} lie past the end", count, table));
    for (uint64_t i = 0; i < count; ++i) {
      const uint64_t h = table + i * 64;
      Section s;
      s.type = image_.u32(h + 4);
      s.link = image_.u32(h + 40);
      s.entry_size = image_.u64(h + 56);
      const uint64_t offset = image_.u64(h + 24), size = image_.u64(h + 32);
      if (s.type != 8 /* SHT_NOBITS */ && s.type != 0) s.data = slice(offset, size, i);
      name_offsets_.push_back(image_.u32(h));
      sections_.push_back(std::move(s));
    }
    if (names_index >= sections_.size())
      malformed(fmt::format("section names in section {} of {}", names_index, count));
    for (size_t i = 0; i < sections_.size(); ++i)
      sections_[i].name = string_at(sections_[names_index].data, name_offsets_[i]);
  }

  const std::vector<Section>& sections() const { return sections_; }

  /// The NUL-terminated string at `offset` of a string table.
  static std::string string_at(std::string_view table, uint64_t offset) {
    if (offset >= table.size())
      malformed(fmt::format("a name at offset {} past its table ({} bytes)", offset, table.size()));
    const size_t end = table.find('\0', offset);
    if (end == std::string_view::npos) malformed("an unterminated name");
    return std::string(table.substr(offset, end - offset));
  }

 private:
  std::string_view slice(uint64_t offset, uint64_t size, uint64_t index) const {
    if (offset > image_.data.size() || image_.data.size() - offset < size)
      malformed(fmt::format("section {} ({} bytes at offset {}) lies past the end ({} bytes)", index,
                            size, offset, image_.data.size()));
    return image_.data.substr(offset, size);
  }

  Bytes image_;
  std::vector<Section> sections_;
  std::vector<uint32_t> name_offsets_;
};

/// The KPARAM_INFO attributes of one `.nv.info.<kernel>` section, in ordinal order.
std::vector<KernelParam> params_of(const Section& info) {
  const Bytes b{info.data};
  std::vector<KernelParam> params;
  uint64_t pos = 0;
  while (pos < info.data.size()) {
    const uint8_t format = b.u8(pos), attribute = b.u8(pos + 1);
    uint64_t value = pos + 2, value_size = 2;  // EIFMT_NVAL, BVAL, HVAL: 2 bytes
    if (format == 4) {                          // EIFMT_SVAL: u16 size, then the value
      value = pos + 4;
      value_size = b.u16(pos + 2);
    } else if (format < 1 || format > 3) {
      malformed(fmt::format("{}: attribute {:#x} at offset {} has unknown format {}", info.name,
                            attribute, pos, format));
    }
    if (value_size > info.data.size() - std::min<uint64_t>(value, info.data.size()))
      malformed(fmt::format("{}: attribute {:#x} at offset {} runs past the section", info.name,
                            attribute, pos));
    if (attribute == kAttributeParamInfo) {
      if (format != 4 || value_size < 12)
        malformed(fmt::format("{}: a parameter attribute of format {} and {} bytes", info.name, format,
                              value_size));
      KernelParam p;
      p.ordinal = b.u16(value + 4);
      p.offset = b.u16(value + 6);
      p.size = static_cast<int>((b.u32(value + 8) >> 18) & 0x3fff);
      params.push_back(p);
    }
    pos = value + value_size;
  }
  std::vector<KernelParam> ordered(params.size());
  std::vector<bool> seen(params.size(), false);
  for (const KernelParam& p : params) {
    if (p.ordinal >= static_cast<int>(params.size()) || seen[p.ordinal])
      malformed(fmt::format("{}: parameter ordinal {} out of place among {} parameters", info.name,
                            p.ordinal, params.size()));
    seen[p.ordinal] = true;
    ordered[p.ordinal] = p;
  }
  return ordered;
}

}  // namespace

KernelParams kernel_params(std::string_view cubin) {
  const Elf elf(cubin);
  KernelParams kernels;
  for (const Section& symbols : elf.sections()) {
    if (symbols.type != kSectionSymbols) continue;
    if (symbols.entry_size != 24)
      malformed(fmt::format("symbols of {} bytes (24 expected)", symbols.entry_size));
    if (symbols.link >= elf.sections().size()) malformed("the symbol table's names are in no section");
    const std::string_view names = elf.sections()[symbols.link].data;
    const Bytes b{symbols.data};
    for (uint64_t at = 0; at + 24 <= symbols.data.size(); at += 24) {
      const uint8_t info = b.u8(at + 4), other = b.u8(at + 5);
      if ((info & 0xf) == kSymbolFunction && (other & kSymbolEntry))
        kernels.emplace(Elf::string_at(names, b.u32(at)), std::vector<KernelParam>{});
    }
  }
  for (const Section& s : elf.sections()) {
    if (s.name.rfind(kInfoPrefix, 0) != 0) continue;
    auto it = kernels.find(s.name.substr(kInfoPrefix.size()));
    if (it != kernels.end()) it->second = params_of(s);
  }
  return kernels;
}

}  // namespace kbrl

#pragma once
// The parameter lists of the kernels in a cubin, read from the ELF that NVRTC produces, and the
// check of a launch plan against them. A plan whose argument count or sizes differ from the
// compiled kernel's parameters would be undefined behaviour at launch (the driver copies each
// parameter's size from each argument's slot); this finds it before any launch, without a GPU.
//
// Where the cubin says it: each kernel (a FUNC symbol marked as an entry, st_other & 0x10) has a
// section `.nv.info.<kernel>` of attributes, each `u8 format, u8 attribute` then a value (format
// 1-3: two bytes; format 4: a u16 size and that many bytes). Attribute 0x17, EIATTR_KPARAM_INFO,
// describes one parameter: u32 index, u16 ordinal, u16 offset, u32 whose bits 18-31 are its size
// in bytes (as `cuobjdump -elf` prints them). A kernel without parameters has none.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <kernels/candidate.h>

namespace kbrl {

struct KernelParam {
  int ordinal = 0;  // position in the parameter list, from 0
  int offset = 0;   // byte offset in the parameter buffer
  int size = 0;     // bytes
  bool operator==(const KernelParam&) const = default;
};

/// Each kernel's parameters in the cubin, by kernel name (the symbol: an extern "C" name or a
/// mangled one), in ordinal order. Throws InputError for a malformed cubin (not a 64-bit
/// little-endian ELF, a section or entry past its bounds, parameter ordinals that are not 0..n-1).
std::map<std::string, std::vector<KernelParam>> kernel_params(std::string_view cubin);

/// Why the candidate's launch plan cannot be launched with these kernels' parameters: a launch
/// passing another number of arguments than its kernel takes, or an argument whose size
/// (arg_bytes: pointers and i64 8 bytes, i32, f32 and task scalars 4) differs from its parameter's,
/// naming the launch, the kernel, the argument index and both sides. nullopt when every launch
/// matches. A launch whose kernel the cubin does not define is left to the load stage (its
/// load_error), and an empty cubin (a compute_XX compile: PTX only) cannot be checked: nullopt.
/// Throws InputError for a malformed cubin.
std::optional<std::string> launch_argument_mismatch(const Candidate& candidate, std::string_view cubin);

}  // namespace kbrl

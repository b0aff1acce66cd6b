#pragma once
// The parameter lists of the kernels in a cubin, read from the ELF that NVRTC produces: compile()
// reads them once into the CompiledModule (compile.h), and the evaluator's preflight
// (compile.h's preflight) checks a launch plan against them before any launch, without a GPU (a plan
// whose argument count or sizes differ from the kernel's parameters would be undefined behaviour at
// launch: the driver copies each parameter's size from each argument's slot).
//
// Where the cubin says it: each kernel (a FUNC symbol marked as an entry, st_other & 0x10) has a
// section `.nv.info.<kernel>` of attributes, each `u8 format, u8 attribute` then a value (format
// 1-3: two bytes; format 4: a u16 size and that many bytes). Attribute 0x17, EIATTR_KPARAM_INFO,
// describes one parameter: u32 index, u16 ordinal, u16 offset, u32 whose bits 18-31 are its size
// in bytes (as `cuobjdump -elf` prints them). A kernel without parameters has none.
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace kbrl {

struct KernelParam {
  int ordinal = 0;  // position in the parameter list, from 0
  int offset = 0;   // byte offset in the parameter buffer
  int size = 0;     // bytes
  bool operator==(const KernelParam&) const = default;
};

/// Each kernel's parameters, by kernel name (the symbol: an extern "C" name or a mangled one), in
/// ordinal order.
using KernelParams = std::map<std::string, std::vector<KernelParam>>;

/// The kernels of a cubin and their parameters. Throws InputError for a malformed cubin (not a
/// 64-bit little-endian ELF, a section or entry past its bounds, parameter ordinals that are not
/// 0..n-1).
KernelParams kernel_params(std::string_view cubin);

}  // namespace kbrl

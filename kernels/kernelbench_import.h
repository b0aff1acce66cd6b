#pragma once
// KernelBench-format answers as kbrl candidates. KernelBench asks for a Python `ModelNew` whose CUDA
// comes through torch.utils.cpp_extension.load_inline: device code plus a host function that
// allocates the output and launches the kernels. kbrl runs no Python and no host code of a
// candidate; the importer reads the host function instead and writes what it does as a launch plan
// (`// kbrl: launch` lines over the task's tensors, kernels/candidate_file.h), so the plan and every
// check stay kbrl's. What it reads:
//   - the answer: one load_inline extension whose CUDA source is a Python string literal (or a
//     module-level name bound to one, or a list of them); ModelNew.forward returning one call of one
//     of its functions on forward's own arguments (`.contiguous()`, `.cuda()`, `.float()` dropped)
//     and number literals; forward's tensors are the task's inputs in order, then its scalars;
//   - the host function `torch::Tensor f(torch::Tensor a, ..., float s)`: a straight sequence of
//     integer size declarations (`x.numel()`, `x.size(d)`, `x.sizes()[d]`, `x.dim()`, arithmetic,
//     min/max, casts, the source's integer `#define`s and constants), `dim3` declarations, pointer
//     declarations (`float* p = x.data_ptr<float>();`), one output allocation shaped like the task's
//     output (`torch::empty_like(x)`, `torch::zeros({M, N}, x.options())`, ...; others are scratch
//     buffers), launches `k<<<grid, block[, smem[, stream]]>>>(args)` (also in the float branch of an
//     AT_DISPATCH; a kernel templated on one type becomes the float one), and `return out;`.
//     Checks (TORCH_CHECK, CHECK_* macros, `if (err != cudaSuccess) ...`), streams, guards and
//     synchronization are skipped: kbrl checks and times on its own stream.
// Anything else (kernels templated otherwise, cuBLAS, another torch operation, control flow,
// a ModelNew with weights of its own, a forward that does more than one call, broken syntax, no
// CUDA at all) is unsupported, with the reason: the record's outcome is `unsupported_format`.
#include <string>
#include <string_view>

#include <reference/task.h>

namespace kbrl {

/// Python code with `class ModelNew`: an answer in KernelBench's format.
bool is_kernelbench_answer(std::string_view code);

struct KernelBenchImport {
  std::string candidate_file;  // the candidate file (device code and `// kbrl:` lines); "" when unsupported
  std::string unsupported;     // why the answer cannot be read, when it cannot
};

/// The candidate file of a KernelBench-format answer to `task`, or why there is none. Never throws
/// for any text (the caller parses the file with parse_candidate_file, whose errors are format
/// errors of the answer: a grid too large, an argument out of range).
KernelBenchImport import_kernelbench_answer(std::string_view code, const TaskSpec& task);

}  // namespace kbrl

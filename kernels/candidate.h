#pragma once
// The candidate contract (DESIGN.md): device code only, plus a launch plan over a fixed vocabulary
// of arguments. The harness owns buffers, the stream, launches and timing; a candidate cannot run
// host code. Every action (a generator's knobs, an LLM's text) ends as one of these.
#include <cstdint>
#include <string>
#include <vector>

namespace kbrl {

/// What a kernel argument refers to. Pointers are passed as device pointers of the tensor's dtype.
enum class ArgKind {
  input,        // the task's i-th input tensor (read-only)
  parameter,    // the reference module's i-th parameter (read-only)
  output,       // the task's i-th output tensor
  scratch,      // the candidate's i-th scratch buffer (declared in Candidate::scratch)
  task_scalar,  // the task's i-th scalar (e.g. task 5's s), passed as float
  f32,          // a float constant
  i32,          // an int constant
  i64,          // a long long constant
};

struct KernelArg {
  ArgKind kind = ArgKind::input;
  int index = 0;        // for input, parameter, output, scratch, task_scalar
  double value = 0.0;   // for f32
  int64_t ivalue = 0;   // for i32, i64
  bool operator==(const KernelArg&) const = default;
};

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
  bool operator==(const Dim3&) const = default;
};

/// One kernel launch, in plan order, on the harness's stream.
struct Launch {
  std::string kernel;  // the __global__ function's name (extern "C" or the mangled name)
  Dim3 grid;
  Dim3 block;
  uint32_t shared_bytes = 0;  // dynamic shared memory
  std::vector<KernelArg> args;
  bool operator==(const Launch&) const = default;
};

/// A device buffer the harness allocates for the candidate (contents undefined at each launch).
struct ScratchBuffer {
  std::string name;
  int64_t bytes = 0;
  bool operator==(const ScratchBuffer&) const = default;
};

struct Candidate {
  int task_id = 0;
  std::string source;                // one CUDA C++ translation unit, compiled by NVRTC
  std::vector<Launch> launches;      // executed in order
  std::vector<ScratchBuffer> scratch;
  std::vector<std::string> options;  // from the allowed list only (see harness/compile.h)
  bool operator==(const Candidate&) const = default;
};

}  // namespace kbrl

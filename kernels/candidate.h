#pragma once
// The candidate contract (docs/design.md): device code only, plus a launch plan over a fixed vocabulary
// of arguments. The harness owns buffers, the stream, launches and timing; a candidate cannot run
// host code. Every action (a generator's knobs, an LLM's text) ends as one of these. Its JSON form.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include <kbrl/enum_names.h>

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
template <>
struct EnumNames<ArgKind> {  // the names of the JSON form (below)
  static constexpr std::string_view what = "argument kind";
  static constexpr EnumEntry<ArgKind> entries[] = {
      {ArgKind::input, "input"},
      {ArgKind::parameter, "parameter"},
      {ArgKind::output, "output"},
      {ArgKind::scratch, "scratch"},
      {ArgKind::task_scalar, "task_scalar"},
      {ArgKind::f32, "f32"},
      {ArgKind::i32, "i32"},
      {ArgKind::i64, "i64"},
  };
};

/// The bytes the harness passes for an argument of this kind: 8 for a tensor or scratch pointer and
/// for i64, 4 for f32, i32 and a task scalar (passed as float). A kernel parameter of another size
/// cannot take it (harness/compile/compile.h's preflight checks plans against the compiled kernels).
int arg_bytes(ArgKind kind);

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
  std::vector<std::string> options;  // from the allowed list only (see harness/compile/compile.h)
  bool operator==(const Candidate&) const = default;
};

/// The limits of a launch plan. parse_candidate_file refuses a file past any of them (naming the
/// limit and the line); plan_limit_violation checks a Candidate made any other way.
namespace plan_limits {
inline constexpr size_t kMaxLaunches = 64;
inline constexpr size_t kMaxArgsPerLaunch = 256;
inline constexpr size_t kMaxScratchBuffers = 16;
/// All scratch buffers together (the GPU session enforces the same bound).
inline constexpr int64_t kMaxScratchBytes = int64_t{8} << 30;
/// Dynamic shared memory per launch: 227 KiB, the most a block can have on any GPU so far
/// (sm_90, sm_100); a GPU with less (sm_86: 99 KiB) refuses more at launch (launch_error).
inline constexpr uint32_t kMaxSharedBytes = 227 * 1024;
inline constexpr int64_t kMaxBlockThreads = 1024;
/// CUDA's limits per axis (x, y, z).
inline constexpr int64_t kMaxGrid[3] = {2147483647, 65535, 65535};
inline constexpr int64_t kMaxBlock[3] = {1024, 1024, 64};
}  // namespace plan_limits

/// Which of plan_limits the candidate breaks (the first found, naming the launch or scratch buffer
/// and the limit), or nullopt. Also a zero grid or block dimension and a scratch buffer of no bytes.
std::optional<std::string> plan_limit_violation(const Candidate& candidate);

// ---- the JSON form (nlohmann_json), used by the rollout log and replay ----
// Field names follow the C++ members; an argument is {"kind": "input", "index": 0} or {"kind":
// "f32", "value": 0.5}; a Dim3 is [x, y, z]. A NaN or infinite f32 constant has no JSON form (it is
// written as null).

std::string_view to_string(ArgKind kind);
ArgKind parse_arg_kind(std::string_view text);  // throws InputError naming the legal kinds

void to_json(nlohmann::json& j, const KernelArg& arg);
void from_json(const nlohmann::json& j, KernelArg& arg);
void to_json(nlohmann::json& j, const Dim3& dim);
void from_json(const nlohmann::json& j, Dim3& dim);
void to_json(nlohmann::json& j, const Launch& launch);
void from_json(const nlohmann::json& j, Launch& launch);
void to_json(nlohmann::json& j, const ScratchBuffer& scratch);
void from_json(const nlohmann::json& j, ScratchBuffer& scratch);
void to_json(nlohmann::json& j, const Candidate& candidate);
void from_json(const nlohmann::json& j, Candidate& candidate);

/// from_json with every malformed document (missing field, wrong type, unknown kind) reported as
/// InputError instead of nlohmann's exceptions.
Candidate candidate_from_json(const nlohmann::json& j);

}  // namespace kbrl

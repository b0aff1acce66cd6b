#pragma once
// C++ helpers shared by the generator families (kernels/generators/*.cpp only): the task-table
// lookup and the checks at the start of space() and generate(), the fast-math constraint and
// compile option, and the scalar arguments and grid sizes of launch plans.
#include <cstdint>
#include <string>
#include <string_view>

#include <kernels/generator.h>

namespace kbrl {

/// An H100 SXM's SM count, and two waves of its resident threads (2048 per SM): the cap of the
/// grid=waves plans.
constexpr int64_t kH100Sms = 132;
constexpr int64_t kTwoWaveThreads = 2 * kH100Sms * 2048;

/// The entry of a family's task table whose member `id` equals `task_id`, or nullptr.
template <class Table, class Entry>
const Entry* find_entry(const Table& table, int Entry::*id, int task_id) {
  for (const Entry& e : table)
    if (e.*id == task_id) return &e;
  return nullptr;
}

/// Throws InputError "the <family> generator does not cover task <id> (<name>)" unless `covered`.
void check_covered(bool covered, std::string_view family, const TaskSpec& task);

/// `given` checked against `space` (InputError with the reason), in the space's order.
Config checked_config(const KnobSpace& space, const Config& given);

/// "fast_math=on requires precision=fp32 (one unsafe precision knob at a time)".
Constraint fast_math_needs_fp32();

/// Appends --use_fast_math to the candidate's options when `config` has fast_math=on.
void add_fast_math_option(Candidate& candidate, const Config& config);

/// Scalar kernel arguments.
KernelArg i64_arg(int64_t v);
KernelArg i32_arg(int64_t v);
KernelArg f32_arg(double v);

/// `blocks` as a grid dimension; throws InputError "task <id>: <blocks> blocks exceed CUDA's grid
/// limit" outside 1 .. 2^31 - 1.
uint32_t grid_dim(int64_t blocks, int task_id);

/// Replaces every occurrence of `what` in `text` by `with`, left to right (a replacement is not
/// searched again).
void replace_all(std::string& text, std::string_view what, std::string_view with);

}  // namespace kbrl

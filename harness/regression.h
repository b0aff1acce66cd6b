#pragma once
// Regression checks of a kernel suite against a baseline (`kbrl baseline`, `kbrl regress`; README,
// "CI regression checks"). A suite is a list of candidate files with their task ids: kbrl's
// known-good kernels (`known-good`) or a manifest of one's own. A baseline is each kernel's record
// (outcome, compile findings, timing and the speedup's 95% interval) with the machine it was taken
// on. A check measures again and decides per kernel:
//   - regression: the outcome left `ok` (or, compiling only, the kernel stopped compiling), a new
//     precision-audit finding, or slower beyond the noise, which takes all three of: the kernel's
//     median time grew by more than the threshold (default 3%), its times moved beyond their
//     interquartile ranges (now's first quartile above the baseline's third), and the speedup's 95%
//     intervals (paired with the reference timed in the same run) do not overlap;
//   - improvement: the outcome became `ok`, or faster by the same three tests the other way;
//   - unchanged: anything else, including a move beyond the threshold that fails the other tests
//     (inconclusive, said in the detail).
// Why all three (measured on an H100, results/h100-80gb-hbm3/regression/): the paired speedup
// cancels a GPU's clock drift between runs but carries the reference's own run-to-run changes
// (torch's 4096^3 matmul took 2.65 or 2.75 ms from one process to the next, which moved the
// known-good GEMM's speedup 3.7% while its own time moved 0.1%); a kernel's time carries clock
// drift but not the reference's; the quartiles keep a kernel of tens of microseconds, whose median
// moves 12% between runs, from passing on its median alone. Results as JUnit XML (every CI system
// reads it) and a Markdown table.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "record/eval_record.h"

namespace kbrl {

struct SuiteKernel {
  std::filesystem::path file;  // absolute, or relative to the working directory
  int task_id = 0;
  std::string name;  // as the suite names it (a manifest's "file", a known-good file's name), unique in it
};

struct Suite {
  std::string name;
  std::string scale = "kernelbench";
  std::string mode = "full";
  std::string inputs = "robust";
  std::string tolerance = "strict";
  std::vector<SuiteKernel> kernels;
};

/// "known-good" (kbrl's known-good kernels, kernels/kernel_catalog.h), or a manifest file:
///   {"suite": NAME, "scale", "mode", "inputs", "tolerance" (optional, the defaults above),
///    "kernels": [{"file": PATH relative to the manifest, "task": ID}, ...]}
/// InputError naming the file and what is wrong (a missing kernel file, an unknown task, a
/// duplicate name, an unknown key).
Suite read_suite(const std::string& name_or_file);

/// The machine a baseline was taken on.
struct MachineInfo {
  std::string gpu;     // the device's name, "" when compiling only
  std::string arch;    // the NVRTC target
  std::string driver;  // the CUDA driver's version, "" without a GPU
  std::string kbrl_version, commit;
  bool compile_only = false;
  bool operator==(const MachineInfo&) const = default;
};

struct BaselineEntry {
  std::string name;
  int task_id = 0;
  std::string sha256;  // of the kernel file's bytes
  EvalRecord record;
};

struct Baseline {
  Suite suite;  // its settings and names (files as given)
  MachineInfo machine;
  std::string timestamp;
  std::vector<BaselineEntry> entries;
};

nlohmann::json to_json(const Baseline& b);
/// InputError naming `source` for anything malformed.
Baseline baseline_from_json(const nlohmann::json& j, const std::string& source);

/// Why the baseline cannot be compared with this machine's results ("" when it can): another GPU
/// model, driver, NVRTC target or compile-only setting.
std::string machine_mismatch(const MachineInfo& baseline, const MachineInfo& now);

/// Does the kernel pass: outcome ok, or, compiling only, compiled (outcome not_run)?
bool passes(const EvalRecord& r);

enum class Verdict { regression, improvement, unchanged, new_kernel };
std::string_view to_string(Verdict v);

struct KernelVerdict {
  std::string name;
  int task_id = 0;
  Verdict verdict = Verdict::unchanged;
  std::string detail;  // one line: what changed, with the numbers
  std::optional<EvalRecord> baseline;
  EvalRecord now;
};

/// The default threshold: a 5% slower kernel is flagged on an H100 (a planted 5% measured 4.6% to
/// 6.7% longer), and the same commit against its own baseline flagged nothing.
inline constexpr double kDefaultRegressThreshold = 0.03;

/// The decision for one kernel (see the top of this file); `threshold` is a fraction of the
/// kernel's median time (0.03 = 3% longer or shorter).
KernelVerdict decide(const std::string& name, const std::optional<EvalRecord>& baseline, const EvalRecord& now,
                     double threshold);

/// JUnit XML: one testsuite, one testcase per kernel; a regression is a <failure>, an
/// improvement or a new kernel a passing case with its detail in <system-out>.
std::string junit_xml(const std::string& suite, const std::vector<KernelVerdict>& verdicts, double seconds);
/// A Markdown table: kernel, task, verdict, baseline and now (outcome, speedup [interval]), detail.
std::string markdown_summary(const std::string& suite, const MachineInfo& machine,
                             const std::vector<KernelVerdict>& verdicts);

}  // namespace kbrl

#pragma once
// Regression checks of a kernel suite against a baseline (`kbrl baseline`, `kbrl regress`; README,
// "CI regression checks"). A suite is a list of candidate files with their task ids: kbrl's
// known-good kernels (`known-good`) or a manifest of one's own. A baseline is each kernel's record
// (outcome, compile findings, timing and the speedup's 95% interval) with the machine it was taken
// on. A check measures again and decides per kernel:
//   - regression: the outcome left `ok` (or, compiling only, the kernel stopped compiling), a new
//     precision-audit finding, or slower beyond the noise: the speedup fell by more than the
//     threshold and the two 95% intervals do not overlap;
//   - improvement: the outcome became `ok`, or faster by the same test the other way;
//   - unchanged: anything else, including a move beyond the threshold inside the noise
//     (inconclusive, said in the detail).
// Speedups are paired with the reference timed in the same run, so a GPU's clock drift between the
// two runs cancels. Results as JUnit XML (every CI system reads it) and a Markdown table.
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

/// The decision for one kernel (see the top of this file); `threshold` is a fraction (0.05 = 5%).
KernelVerdict decide(const std::string& name, const std::optional<EvalRecord>& baseline, const EvalRecord& now,
                     double threshold);

/// JUnit XML: one testsuite, one testcase per kernel; a regression is a <failure>, an
/// improvement or a new kernel a passing case with its detail in <system-out>.
std::string junit_xml(const std::string& suite, const std::vector<KernelVerdict>& verdicts, double seconds);
/// A Markdown table: kernel, task, verdict, baseline and now (outcome, speedup [interval]), detail.
std::string markdown_summary(const std::string& suite, const MachineInfo& machine,
                             const std::vector<KernelVerdict>& verdicts);

}  // namespace kbrl

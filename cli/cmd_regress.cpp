// `kbrl baseline` (measure a kernel suite and keep the records with the machine) and `kbrl regress`
// (measure it again and decide per kernel: regression, improvement, unchanged; JUnit XML and a
// Markdown summary; exit 4 on a regression). harness/regression.h has the decision.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <kbrl/cli_main.h>
#include <kbrl/error.h>
#include <kbrl/sha256.h>

#include "commands.h"
#include "out_dir.h"
#include "run_options.h"
#include <harness/evaluator.h>
#include <harness/gpu/cuda_driver.h>
#include <harness/gpu/gpu_session.h>
#include <harness/record/build_commit.h>
#include <harness/regression.h>
#include <kernels/candidate_file.h>
#include <reference/task_registry.h>

namespace kbrl::cli {
namespace {

namespace fs = std::filesystem;

struct RegressOptions {
  std::string suite;
  std::string out;       // baseline: the file to write; regress: this run's records as a baseline (optional)
  std::string baseline;  // regress
  double threshold = kDefaultRegressThreshold;
  std::string junit, markdown;
  bool allow_other_machine = false;
  bool force = false;
  EvalFlags flags;
};

/// Every kernel of the suite evaluated once under the suite's settings: compile-only for --arch
/// (default sm_90) when there is no GPU.
Baseline measure(const Suite& suite, const RegressOptions& o) {
  EvalFlags f = o.flags;
  f.scale = suite.scale;
  f.mode = suite.mode;
  f.inputs = suite.inputs;
  f.tolerance = suite.tolerance;
  EvalSettings settings = eval_settings(f);
  Baseline b;
  b.suite = suite;
  b.machine.kbrl_version = std::string(kbrl_version());
  b.machine.commit = std::string(kbrl_commit());
  if (std::string why; !gpu_available(&why)) {
    settings.compile_only = true;
    if (settings.arch.empty()) settings.arch = "sm_90";
    std::cerr << fmt::format("kbrl: no GPU ({}): compiling the suite for {} only\n", why, settings.arch);
    b.machine.compile_only = true;
  }
  Evaluator evaluator(settings);
  if (!b.machine.compile_only) {
    b.machine.gpu = evaluator.device().name;
    int version = 0;
    if (cuda::driver().driver_get_version(&version) == CUDA_SUCCESS)
      b.machine.driver = fmt::format("{}.{}", version / 1000, (version % 1000) / 10);
  }
  b.machine.arch = settings.arch.empty() ? evaluator.device().arch : settings.arch;
  b.timestamp = utc_timestamp();
  const Scale scale = parse_scale(suite.scale);
  for (size_t i = 0; i < suite.kernels.size(); ++i) {
    const SuiteKernel& k = suite.kernels[i];
    const std::string raw = read_candidate_file(k.file.string());
    const Candidate candidate = parse_candidate_file(raw, task_spec(k.task_id, scale), k.file.filename().string());
    b.entries.push_back({k.name, k.task_id, sha256_hex(raw), evaluator.evaluate(candidate, raw)});
    const EvalRecord& r = b.entries.back().record;
    std::cerr << fmt::format("kbrl: [{}/{}] {} (task {}): {}{}\n", i + 1, suite.kernels.size(), k.name, k.task_id,
                             to_string(r.outcome), r.speedup_ci ? fmt::format(" {:.3f}x", r.speedup) : "");
  }
  return b;
}

void run_baseline(const RegressOptions& o) {
  KBRL_CHECK_INPUT(o.force || !fs::exists(o.out), "--out {} exists: give another file, or --force to replace it", o.out);
  const Baseline b = measure(read_suite(o.suite), o);
  write_whole_file(o.out, to_json(b).dump(1) + "\n");
  int ok = 0;
  for (const BaselineEntry& e : b.entries) ok += passes(e.record);
  std::cout << fmt::format("baseline of {} ({} kernels, {} {}) written to {}\n", b.suite.name, b.entries.size(),
                           ok, b.machine.compile_only ? "compiled" : "ok", o.out);
}

void run_regress(const RegressOptions& o) {
  KBRL_CHECK_INPUT(o.threshold >= 0 && o.threshold < 1, "--threshold must be in [0, 1) (got {})", o.threshold);
  std::ifstream in(o.baseline);
  KBRL_CHECK_INPUT(in.good(), "cannot read the baseline {}", o.baseline);
  const Baseline was = baseline_from_json(nlohmann::json::parse(in, nullptr, false), o.baseline);
  const Suite suite = read_suite(o.suite);
  KBRL_CHECK_INPUT(suite.scale == was.suite.scale && suite.mode == was.suite.mode && suite.inputs == was.suite.inputs &&
                       suite.tolerance == was.suite.tolerance,
                   "{} was measured at scale {}, mode {}, inputs {}, tolerance {}; the suite now asks for {}, {}, {}, "
                   "{}: take a new baseline",
                   o.baseline, was.suite.scale, was.suite.mode, was.suite.inputs, was.suite.tolerance, suite.scale,
                   suite.mode, suite.inputs, suite.tolerance);
  const auto start = std::chrono::steady_clock::now();
  const Baseline now = measure(suite, o);
  if (const std::string why = machine_mismatch(was.machine, now.machine); !why.empty()) {
    KBRL_CHECK_INPUT(o.allow_other_machine, "{}: {} (timings do not compare across machines; --allow-other-machine "
                     "compares anyway)", o.baseline, why);
    std::cerr << "kbrl: warning: " << why << " (--allow-other-machine)\n";
  }
  std::vector<KernelVerdict> verdicts;
  int regressions = 0;
  for (const BaselineEntry& e : now.entries) {
    std::optional<EvalRecord> before;
    for (const BaselineEntry& w : was.entries)
      if (w.name == e.name && w.task_id == e.task_id) before = w.record;
    verdicts.push_back(decide(e.name, before, e.record, o.threshold));
    regressions += verdicts.back().verdict == Verdict::regression;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string summary = markdown_summary(suite.name, now.machine, verdicts);
  std::cout << summary;
  if (!o.junit.empty()) write_whole_file(o.junit, junit_xml(suite.name, verdicts, seconds));
  if (!o.markdown.empty()) write_whole_file(o.markdown, summary);
  if (!o.out.empty()) write_whole_file(o.out, to_json(now).dump(1) + "\n");
  if (regressions > 0) command_exit_code() = kExitCandidateFailed;
}

void add_common(CLI::App* cmd, RegressOptions& o) {
  cmd->add_option("--suite", o.suite, "known-good (kbrl's known-good kernels) or a suite manifest (JSON: suite, "
                                      "kernels [{file, task}], optional scale, mode, inputs, tolerance)")
      ->required();
  add_eval_flags(cmd, o.flags);  // the suite's scale, mode, inputs and tolerance win over the flags
}

}  // namespace

void add_baseline_command(CLI::App& app) {
  auto o = std::make_shared<RegressOptions>();
  auto* cmd = app.add_subcommand("baseline", "Measure a kernel suite and write its baseline (each kernel's record "
                                             "and the machine) for kbrl regress");
  add_common(cmd, *o);
  cmd->add_option("--out", o->out, "the baseline file to write (JSON)")->required();
  cmd->add_flag("--force", o->force, "replace --out if it exists");
  cmd->callback([o] { run_baseline(*o); });
}

void add_regress_command(CLI::App& app) {
  auto o = std::make_shared<RegressOptions>();
  auto* cmd = app.add_subcommand("regress", "Measure a kernel suite again and compare it with its baseline: "
                                            "regression, improvement or unchanged per kernel");
  add_common(cmd, *o);
  cmd->add_option("--baseline", o->baseline, "the baseline (kbrl baseline --out)")->required();
  cmd->add_option("--threshold", o->threshold, "a change of the kernel's median time smaller than this fraction is "
                                               "unchanged; a larger one counts only beyond the noise (quartiles and the "
                                               "speedup's 95% intervals apart)")
      ->capture_default_str();
  cmd->add_option("--junit", o->junit, "write JUnit XML here (one testcase per kernel, a regression fails)");
  cmd->add_option("--markdown", o->markdown, "write the Markdown summary here (also printed)");
  cmd->add_option("--out", o->out, "write this run's measurements as a new baseline here");
  cmd->add_flag("--allow-other-machine", o->allow_other_machine,
                "compare with a baseline from another GPU model, driver or NVRTC target");
  cmd->footer("Exit codes: 0 no regression, 4 a kernel regressed, 2 bad input, 1 a fault of the machine or harness.");
  cmd->callback([o] { run_regress(*o); });
}

}  // namespace kbrl::cli

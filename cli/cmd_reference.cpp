// `kbrl time-reference`: times the libtorch references on this machine's GPU (in-process: references
// are trusted code), optionally next to KernelBench's published eager timings.
#include <fstream>
#include <iostream>
#include <map>
#include <memory>

#include <fmt/format.h>
#include <kbrl/csv.h>
#include <kbrl/error.h>

#include "commands.h"
#include <experiments/csv_table.h>
#include <harness/gpu/gpu_session.h>
#include <harness/stats.h>
#include <reference/splits.h>
#include <reference/task_registry.h>

namespace kbrl::cli {
namespace {

struct TimeReferenceOptions {
  std::string split = "all";
  std::vector<int> ids;
  std::string scale = "kernelbench";
  std::string mode = "full";
  std::string csv_path;
  std::string compare_path;
  int device = 0;
};

/// KernelBench's published H100 eager means (ms) by task id: source H100_Modal, config torch_eager.
std::map<int, double> read_kernelbench_baseline(const std::string& path) {
  const CsvRows csv = read_csv(path);
  std::map<int, double> out;
  for (size_t row = 0; row < csv.rows.size(); ++row) {
    if (csv.at(row, "config") != "torch_eager" || csv.at(row, "source").find("H100_Modal") == std::string::npos)
      continue;
    try {
      out[std::stoi(csv.at(row, "id"))] = std::stod(csv.at(row, "mean_ms"));
    } catch (const std::logic_error&) {
      throw InputError(fmt::format("{}: id or mean_ms is not a number", csv.where(row)));
    }
  }
  return out;
}

void run_time_reference(const TimeReferenceOptions& opt) {
  const Scale scale = parse_scale(opt.scale);
  TimingSettings timing;
  timing.stop = stop_config(parse_timing_mode(opt.mode));
  const std::vector<int> ids = opt.ids.empty() ? split(opt.split).ids : opt.ids;
  for (int id : ids) task_spec(id, scale);  // reject unknown ids before touching the GPU
  std::map<int, double> baseline;
  if (!opt.compare_path.empty()) baseline = read_kernelbench_baseline(opt.compare_path);
  std::unique_ptr<std::ofstream> csv_out;
  if (!opt.csv_path.empty()) {
    csv_out = std::make_unique<std::ofstream>(opt.csv_path);
    KBRL_CHECK_INPUT(csv_out->good(), "cannot write {}", opt.csv_path);
  }

  GpuSession session(opt.device);
  const std::string device = session.device().name;
  std::cerr << fmt::format("timing {} references at scale {} on {} ({} mode)\n", ids.size(),
                           to_string(scale), device, opt.mode);
  const std::string header =
      "id,name,family,scale,device,mode,samples,median_ms,mean_ms,std_ms,min_ms,max_ms,iqr_ms,"
      "kernelbench_h100_eager_ms,ratio_to_kernelbench,error";
  if (csv_out) *csv_out << header << "\n";
  std::cout << fmt::format("{:>3}  {:<44} {:>10} {:>10} {:>7}\n", "id", "name", "median ms",
                           "KB H100 ms", "ratio");
  int failures = 0;
  for (size_t k = 0; k < ids.size(); ++k) {
    const TaskSpec spec = task_spec(ids[k], scale);
    std::string error;
    RuntimeStats stats;
    try {
      stats = summarize(session.time_reference(spec.id, scale, timing, /*seed=*/1));
    } catch (const std::exception& e) {  // one failing task never stops the sweep
      error = e.what();
      ++failures;
    }
    const auto kb = baseline.find(spec.id);
    const double kb_ms = kb == baseline.end() ? 0.0 : kb->second;
    const double ratio = kb_ms > 0 && error.empty() ? stats.median_ms / kb_ms : 0.0;
    std::cout << fmt::format("{:>3}  {:<44} {:>10.4f} {:>10} {:>7}  {}\n", spec.id,
                             spec.name.substr(0, 44), stats.median_ms,
                             kb_ms > 0 ? fmt::format("{:.4f}", kb_ms) : "-",
                             ratio > 0 ? fmt::format("{:.2f}", ratio) : "-", error);
    if (csv_out) {
      *csv_out << fmt::format("{},{},{},{},{},{},{},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{},{},{}\n",
                              spec.id, csv::field(spec.name), to_string(spec.family),
                              to_string(scale), csv::field(device), opt.mode, stats.n,
                              stats.median_ms, stats.mean_ms, stats.std_ms, stats.min_ms,
                              stats.max_ms, stats.iqr_ms, kb_ms > 0 ? fmt::format("{:.6g}", kb_ms) : "",
                              ratio > 0 ? fmt::format("{:.4g}", ratio) : "", csv::field(error));
      csv_out->flush();
    }
    std::cerr << fmt::format("\r[{}/{}]", k + 1, ids.size()) << std::flush;
  }
  std::cerr << "\n";
  if (failures) throw Error(fmt::format("{} of {} references failed (see the error column)", failures, ids.size()));
}

}  // namespace

void add_time_reference_command(CLI::App& app) {
  auto opt = std::make_shared<TimeReferenceOptions>();
  auto* cmd = app.add_subcommand("time-reference",
                                 "Time the libtorch references on the GPU (L2 flushed, median of samples)");
  cmd->add_option("--split", opt->split, "train, eval, subset1, subset2 or all")->capture_default_str();
  cmd->add_option("--id", opt->ids, "only these task ids (repeatable)");
  cmd->add_option("--scale", opt->scale, "kernelbench or small")->capture_default_str();
  cmd->add_option("--mode", opt->mode, "fast (5 samples), full (50) or adaptive")->capture_default_str();
  cmd->add_option("--csv", opt->csv_path, "also write the rows to this CSV file");
  cmd->add_option("--compare", opt->compare_path,
                  "KernelBench's baseline CSV (h100_baseline_level1.csv): adds its H100 eager mean");
  cmd->add_option("--device", opt->device, "CUDA device index")->capture_default_str();
  cmd->callback([opt] { run_time_reference(*opt); });
}

}  // namespace kbrl::cli

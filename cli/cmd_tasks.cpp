// `kbrl tasks` and `kbrl splits`.
#include <iostream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <kbrl/csv.h>

#include "commands.h"
#include <reference/splits.h>
#include <reference/task_registry.h>

namespace kbrl::cli {
namespace {

std::string shapes(const std::vector<TensorSpec>& tensors) {
  std::vector<std::string> parts;
  for (const auto& t : tensors) {
    std::string part = t.name + ":" + format_shape(t.shape);
    if (t.dtype != DType::f32) part += std::string(":") + std::string(to_string(t.dtype));
    parts.push_back(part);
  }
  return fmt::format("{}", fmt::join(parts, ";"));
}

struct TasksOptions {
  std::string scale = "kernelbench";
  std::string split = "all";
  std::vector<int> ids;
  bool csv = false;
};

void run_tasks(const TasksOptions& opt) {
  const Scale scale = parse_scale(opt.scale);
  std::vector<int> ids = opt.ids.empty() ? split(opt.split).ids : opt.ids;
  std::vector<std::string> train_eval(101);
  for (int id : split("eval").ids) train_eval.at(id) = "eval";
  for (int id : split("train").ids) train_eval.at(id) = "train";
  // Validate every id before printing anything.
  std::vector<TaskSpec> specs;
  for (int id : ids) specs.push_back(task_spec(id, scale));

  if (opt.csv) {
    std::cout << "id,name,family,split,scale,inputs,outputs,parameters,flops,min_bytes\n";
    for (const auto& t : specs) {
      std::cout << fmt::format("{},{},{},{},{},{},{},{},{:.0f},{:.0f}\n", t.id, csv::field(t.name),
                               to_string(t.family), train_eval.at(t.id), to_string(t.scale),
                               csv::field(shapes(t.inputs)), csv::field(shapes(t.outputs)),
                               csv::field(shapes(t.parameters)), t.flops, t.min_bytes);
    }
    return;
  }
  std::cout << fmt::format("{:>3}  {:<48} {:<13} {:<5} {:>10} {:>10}  {}\n", "id", "name", "family",
                           "split", "GFLOP", "min MB", "inputs -> outputs");
  for (const auto& t : specs) {
    std::cout << fmt::format("{:>3}  {:<48} {:<13} {:<5} {:>10.3f} {:>10.1f}  {} -> {}\n", t.id,
                             t.name.substr(0, 48), to_string(t.family), train_eval.at(t.id),
                             t.flops / 1e9, t.min_bytes / 1e6, shapes(t.inputs), shapes(t.outputs));
  }
  std::cout << fmt::format("{} tasks at scale {}\n", specs.size(), to_string(scale));
}

}  // namespace

void add_tasks_command(CLI::App& app) {
  auto opt = std::make_shared<TasksOptions>();
  auto* cmd = app.add_subcommand("tasks", "List tasks: id, name, family, split, shapes, FLOPs, bytes");
  cmd->add_option("--scale", opt->scale, "kernelbench (KernelBench's shapes) or small")
      ->capture_default_str();
  cmd->add_option("--split", opt->split, "train, eval, subset1, subset2 or all")->capture_default_str();
  cmd->add_option("--id", opt->ids, "only these task ids (repeatable)");
  cmd->add_flag("--csv", opt->csv, "write CSV instead of a table");
  cmd->callback([opt] { run_tasks(*opt); });
}

void add_splits_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("splits", "List the named task splits and their ids");
  cmd->callback([] {
    for (const auto& s : splits())
      std::cout << fmt::format("{:<8} {:>3} tasks  {}\n         {}\n", s.name, s.ids.size(),
                               s.description, fmt::join(s.ids, " "));
  });
}

}  // namespace kbrl::cli

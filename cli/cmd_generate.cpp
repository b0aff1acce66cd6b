// `kbrl space` (a task's knob space: knobs, values, constraints, legal count, expert) and
// `kbrl gen` (a generator's candidate for a configuration, printed as a candidate file).
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <kbrl/error.h>

#include "commands.h"
#include <kernels/generator.h>
#include <reference/task_registry.h>

namespace kbrl::cli {
namespace {

struct SpaceOptions {
  int task = 0;
};

void run_space(const SpaceOptions& opt) {
  const TaskSpec task = task_spec(opt.task, Scale::kernelbench);
  const Generator& generator = generator_for(opt.task);
  const KnobSpace space = generator.space(task);
  std::cout << fmt::format("task {} ({}): {} generator, {} knobs, {} legal configurations\n",
                           task.id, task.name, generator.name(), space.knobs().size(),
                           space.size());
  std::cout << "knobs, in token order:\n";
  for (const auto& k : space.knobs())
    std::cout << fmt::format("  {:<17} {:<24} {}\n", k.name,
                             fmt::format("{}", fmt::join(k.values, " ")), k.description);
  std::cout << "constraints:\n";
  for (const auto& c : space.constraints()) std::cout << "  - " << c.description << "\n";
  std::cout << "expert: " << generator.expert(task).str() << "\n";
}

struct GenOptions {
  int task = 0;
  std::string knobs;
  std::string scale = "kernelbench";
};

void run_gen(const GenOptions& opt) {
  const TaskSpec task = task_spec(opt.task, parse_scale(opt.scale));
  const Generator& generator = generator_for(opt.task);
  const KnobSpace space = generator.space(task);
  const Config config = space.with_overrides(generator.expert(task), Config::parse(opt.knobs));
  const Candidate candidate = generator.generate(task, config);
  std::cout << candidate_file_text(
      candidate, task,
      {fmt::format("kbrl gen --task {} --scale {} --knobs {}", task.id, to_string(task.scale),
                   config.str()),
       fmt::format("task {} ({}), {} generator", task.id, task.name, generator.name())});
}

}  // namespace

void add_space_command(CLI::App& app) {
  auto opt = std::make_shared<SpaceOptions>();
  auto* cmd = app.add_subcommand("space", "Print a task's knob space: knobs, values, constraints, "
                                          "number of legal configurations, expert configuration");
  cmd->add_option("--task", opt->task, "task id")->required();
  cmd->callback([opt] { run_space(*opt); });
}

void add_gen_command(CLI::App& app) {
  auto opt = std::make_shared<GenOptions>();
  auto* cmd = app.add_subcommand(
      "gen", "Print a generator's candidate as a candidate file (kbrl eval --kernel reads it)");
  cmd->add_option("--task", opt->task, "task id")->required();
  cmd->add_option("--knobs", opt->knobs,
                  "knob settings K=V,... over the expert configuration (see kbrl space)");
  cmd->add_option("--scale", opt->scale, "kernelbench or small")->capture_default_str();
  cmd->callback([opt] { run_gen(*opt); });
}

}  // namespace kbrl::cli

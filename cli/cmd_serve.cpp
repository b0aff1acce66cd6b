// `kbrl serve`: the evaluator over HTTP for RL trainers (docs/serve.md): one worker per GPU, a
// bounded fair queue, the rollout log as the memory of what was evaluated.
#include <iostream>
#include <memory>
#include <sstream>

#include <fmt/format.h>
#include <kbrl/error.h>

#include "commands.h"
#include <harness/record/build_commit.h>
#include "run_options.h"
#include <harness/compile/compile_child.h>
#include <harness/gpu/cuda_driver.h>
#include <harness/gpu/gpu_session.h>
#include <serve/client.h>
#include <serve/scheduler.h>
#include <serve/local_server.h>
#include <serve/server.h>

namespace kbrl::cli {
namespace {

struct ServeCommandOptions {
  std::string host = "127.0.0.1";
  int port = 8750;
  std::string gpus = "all";
  std::string token_file;
  std::string log_dir;
  size_t max_queue = 4096;
  size_t batch = 64;
  size_t client_batch = 0;
  int http_threads = 4;
  double request_timeout = 3600;
  bool compile_only = false;
  bool allow_unconfined_compile = false;
  bool device_given = false;  // --device (an eval flag): serve picks its GPUs with --gpus
  EvalFlags flags;
};

void run_serve(const ServeCommandOptions& o) {
  KBRL_CHECK_INPUT(o.port >= 0 && o.port <= 65535, "--port {} is not a port", o.port);
  KBRL_CHECK_INPUT(!o.device_given, "--device {}: kbrl serve picks its GPUs with --gpus (e.g. --gpus {})",
                   o.flags.device, o.flags.device);
  EvalSettings settings = eval_settings(o.flags);
  // Candidates come from anyone who can reach the server: their compiles must not read host files.
  const SandboxSupport sandbox = probe_sandbox_support();
  KBRL_CHECK_INPUT(sandbox.landlock_abi > 0 || o.allow_unconfined_compile,
                   "this kernel cannot confine compiles ({}): a candidate's #include could read host files. "
                   "Run kbrl serve where Landlock is enabled, or pass --allow-unconfined-compile if every "
                   "client is trusted (docs/security.md)",
                   sandbox.describe());
  settings.compile_sandbox = sandbox.landlock_abi > 0 ? CompileSandbox::required : CompileSandbox::best_effort;
  if (o.compile_only) {
    settings.compile_only = true;
    if (settings.arch.empty()) settings.arch = "sm_90";
  }
  serving::SchedulerOptions scheduling;
  scheduling.gpus = serving::parse_gpu_list(o.gpus, o.compile_only);
  scheduling.max_queue = o.max_queue;
  scheduling.batch = o.batch;
  scheduling.client_batch = o.client_batch;
  if (!o.log_dir.empty()) scheduling.log = std::filesystem::path(o.log_dir) / "rollouts.jsonl";
  serving::ServerOptions http_options;
  http_options.host = o.host;
  http_options.port = static_cast<uint16_t>(o.port);
  http_options.token = serving::read_token_file(o.token_file);
  http_options.commit = std::string(kbrl_commit());
  http_options.http_threads = o.http_threads;
  http_options.request_timeout_seconds = o.request_timeout;
  serving::Scheduler scheduler(settings, scheduling);
  serving::Server server(http_options, scheduler);
  std::cerr << fmt::format("kbrl serve: listening on http://{}:{} ({} {}, {}{}); compiles {}; Ctrl-C drains\n", o.host,
                           server.port(), scheduling.gpus.size(), o.compile_only ? "compile-only dispatcher" : "GPU(s)",
                           scheduling.log.empty() ? "no log" : "log " + scheduling.log.string(),
                           http_options.token.empty() ? "" : ", bearer token required",
                           sandbox.landlock_abi > 0 ? "confined (" + sandbox.describe() + ")" : "NOT confined");
  std::cout << fmt::format("{{\"listening\": \"http://{}:{}\"}}", o.host, server.port()) << std::endl;
  server.run();
  std::cerr << "kbrl serve: stopped\n";
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto o = std::make_shared<ServeCommandOptions>();
  auto* cmd = app.add_subcommand("serve", "Serve the evaluator over HTTP for RL trainers (docs/serve.md)");
  cmd->add_option("--host", o->host, "address to bind (anything but loopback needs --token-file)")->capture_default_str();
  cmd->add_option("--port", o->port, "port (0: any free one; the first line of stdout says which)")->capture_default_str();
  cmd->add_option("--gpus", o->gpus, "all, or device indices like 0,1: one worker each")->capture_default_str();
  cmd->add_option("--token-file", o->token_file, "a file holding the bearer token every request must carry");
  cmd->add_option("--log", o->log_dir, "folder of the rollout log (rollouts.jsonl): a restart answers from it");
  cmd->add_option("--max-queue", o->max_queue, "items waiting at most (then 429)")->capture_default_str();
  cmd->add_option("--batch", o->batch, "items a GPU takes at once (compiled together)")->capture_default_str();
  cmd->add_option("--client-batch", o->client_batch,
                  "items of one client in a batch at most: bounds one client's compiles in flight per GPU "
                  "(0: --batch)")->capture_default_str();
  cmd->add_option("--http-threads", o->http_threads, "threads answering HTTP")->capture_default_str();
  cmd->add_option("--request-timeout", o->request_timeout,
                  "seconds a synchronous evaluate waits before 504 (its queued items are dropped)")
      ->capture_default_str();
  cmd->add_flag("--allow-unconfined-compile", o->allow_unconfined_compile,
                "serve even where the kernel cannot confine compiles (no Landlock): only for trusted clients");
  cmd->add_flag("--compile-only", o->compile_only,
                "no GPU: compile and answer not_run (for --arch, default sm_90); for wiring a trainer on a CPU");
  cmd->add_option("--scale", o->flags.scale, "kernelbench or small")->capture_default_str();
  add_eval_flags(cmd, o->flags);
  CLI::Option* device = cmd->get_option("--device");
  device->description("not used here: --gpus picks the GPUs");
  cmd->callback([o, device] {
    o->device_given = device->count() > 0;
    run_serve(*o);
  });
}

}  // namespace kbrl::cli

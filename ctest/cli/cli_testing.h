#pragma once
// Runs the `kbrl` program built by this tree and captures its exit status and output.
#include <sys/wait.h>

#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

namespace kbrl::testing {

struct CliResult {
  int status = -1;     // exit status
  std::string output;  // stdout and stderr together
};

/// Runs a shell command line, capturing its output and exit status.
inline CliResult run_shell(const std::string& command) {
  CliResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return result;
  std::array<char, 4096> buffer{};
  size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) result.output.append(buffer.data(), n);
  const int raw = pclose(pipe);
  result.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return result;
}

inline CliResult run_cli(const std::string& args) {
  return run_shell(std::string(KBRL_CLI) + " " + args + " 2>&1");
}

/// run_cli under `timeout` (exit 124 when it runs longer) and, with `limits`, shell limits (e.g.
/// "ulimit -d 8388608"): a regression that hangs, reads without end or serves until killed fails
/// the test instead of the machine.
inline CliResult run_cli_bounded(const std::string& args, const std::string& limits = "", int seconds = 60) {
  return run_shell((limits.empty() ? "" : limits + "; ") + "exec timeout " + std::to_string(seconds) + " " +
                   std::string(KBRL_CLI) + " " + args + " 2>&1");
}

/// A fresh (removed, then created when `create`) directory for one test of `suite`, under the
/// system's temp folder and this process's id.
inline std::filesystem::path fresh_dir(const std::string& suite, const std::string& name, bool create = true) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / (suite + "-" + std::to_string(::getpid())) / name;
  std::filesystem::remove_all(dir);
  if (create) std::filesystem::create_directories(dir);
  return dir;
}

inline int count_lines(const std::string& text) {
  int lines = 0;
  for (char c : text) lines += c == '\n';
  return lines;
}

}  // namespace kbrl::testing

// find_sass_tool and disassemble (declared in precision_audit.h): nvdisasm or cuobjdump on PATH.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "precision_audit.h"

extern char** environ;

namespace kbrl {
namespace {

/// Runs argv with stdout captured (stderr discarded); nullopt unless it exits with status 0.
std::optional<std::string> run_capture(const std::vector<std::string>& argv) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return std::nullopt;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  std::string out;
  if (rc == 0) {
    char buffer[65536];
    for (;;) {
      const ssize_t n = read(fds[0], buffer, sizeof buffer);
      if (n > 0) {
        out.append(buffer, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        break;
      }
    }
  }
  close(fds[0]);
  if (rc != 0) return std::nullopt;
  int status = 0;
  while (waitpid(pid, &status, 0) == -1 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return out;
}

}  // namespace

std::optional<std::string> find_sass_tool() {
  const char* path = std::getenv("PATH");
  if (!path) return std::nullopt;
  for (const char* tool : {"nvdisasm", "cuobjdump"}) {
    std::string_view rest = path;
    while (!rest.empty()) {
      const size_t colon = rest.find(':');
      const std::string dir(rest.substr(0, colon));
      rest = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 1);
      if (dir.empty()) continue;
      const std::string candidate = dir + "/" + tool;
      if (access(candidate.c_str(), X_OK) == 0) return candidate;
    }
  }
  return std::nullopt;
}

std::optional<std::string> disassemble(const std::string& tool, std::string_view cubin) {
  std::string file = (std::filesystem::temp_directory_path() / "kbrl-cubin-XXXXXX").string();
  const int fd = mkstemp(file.data());
  if (fd < 0) return std::nullopt;
  bool written = true;
  for (size_t done = 0; done < cubin.size();) {
    const ssize_t n = write(fd, cubin.data() + done, cubin.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      written = false;
      break;
    }
    done += static_cast<size_t>(n);
  }
  close(fd);
  std::optional<std::string> sass;
  if (written) {
    const bool nvdisasm = std::filesystem::path(tool).filename() == "nvdisasm";
    sass = nvdisasm ? run_capture({tool, file}) : run_capture({tool, "-sass", file});
  }
  std::error_code ignored;
  std::filesystem::remove(file, ignored);
  return sass;
}

}  // namespace kbrl

// find_sass_tool and disassemble (declared in precision_audit.h): nvdisasm or cuobjdump on PATH.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <kbrl/error.h>
#include <kbrl/subprocess.h>

#include "precision_audit.h"

namespace kbrl {
namespace {

/// Runs argv with stdout captured (stderr discarded); nullopt unless it exits with status 0 within
/// a minute.
std::optional<std::string> run_capture(const std::vector<std::string>& argv) {
  try {
    auto [out_read, out_write] = make_pipe();
    SpawnSpec spec;
    spec.argv = argv;
    spec.fds = {{out_write.get(), STDOUT_FILENO}};
    ChildProcess child = spawn(spec);
    out_write.reset();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    auto out = read_until_eof(out_read.get(), deadline, size_t{1} << 30);
    const std::optional<int> status = out ? child.wait_until(deadline) : std::nullopt;
    if (!status || !WIFEXITED(*status) || WEXITSTATUS(*status) != 0) return std::nullopt;
    return out;
  } catch (const Error&) {
    return std::nullopt;
  }
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

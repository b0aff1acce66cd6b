#include "candidate_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <kbrl/error.h>

#include "candidate_file_fields.h"
#include "expression.h"
#include "scaffold.h"

namespace kbrl {
namespace {

using namespace candidate_file_detail;

struct PendingLaunch {
  int line = 0;
  Launch launch;
  std::vector<std::string> args;  // resolved once every scratch line has been read
};

class FileParser {
 public:
  FileParser(std::string_view text, const TaskSpec& task) : text_(text), task_(task) {}

  Candidate parse(std::string_view file_name) {
    candidate_.task_id = task_.id;
    size_t offset = 0;
    for (int number = 1; offset <= text_.size() && !scaffold_line_; ++number) {
      const size_t end = std::min(text_.find('\n', offset), text_.size());
      const std::string_view line = text_.substr(offset, end - offset);
      line_ = number;
      line_begin_ = offset;
      line_end_ = end;
      try {
        if (auto rest = directive(line)) handle(*rest, file_name);
      } catch (const LineError& e) {
        throw InputError(fmt::format("{}:{}: {}", file_name, number, e.what));
      }
      offset = end + 1;
    }
    if (scaffold_line_) {
      // Everything after the scaffold line is the body: a directive there would be silently
      // ignored, so it is an error.
      for (int number = line_ + 1; offset <= text_.size(); ++number) {
        const size_t end = std::min(text_.find('\n', offset), text_.size());
        if (directive(text_.substr(offset, end - offset)))
          throw InputError(fmt::format("{}:{}: kbrl directives must come before 'scaffold' (line {})",
                                       file_name, number, *scaffold_line_));
        offset = end + 1;
      }
      return candidate_;
    }
    candidate_.source = std::string(text_);
    if (pending_.empty())
      throw InputError(fmt::format("{}: no launch: add a `// kbrl: launch <kernel> grid=... "
                                   "block=... args=...` line or a `// kbrl: scaffold` line",
                                   file_name));
    for (auto& pending : pending_) {
      try {
        for (const auto& arg : pending.args)
          pending.launch.args.push_back(resolve_arg(trim(arg), task_, candidate_));
      } catch (const LineError& e) {
        throw InputError(fmt::format("{}:{}: {}", file_name, pending.line, e.what));
      }
      candidate_.launches.push_back(std::move(pending.launch));
    }
    return candidate_;
  }

 private:
  void handle(std::string_view rest, std::string_view file_name) {
    const auto space = rest.find_first_of(" \t");
    const std::string_view kind = rest.substr(0, space);
    const std::string_view args = space == std::string_view::npos ? "" : trim(rest.substr(space));
    if (kind == "option") {
      const auto options = split_top_level(args, ' ');
      if (options.empty()) fail("'option' needs a compile option, e.g. `// kbrl: option -lineinfo`");
      for (const auto& o : options) candidate_.options.push_back(o);
    } else if (kind == "launch") {
      launch(args);
    } else if (kind == "scratch") {
      scratch(args);
    } else if (kind == "scaffold") {
      scaffold_rest(args, file_name);
    } else {
      fail(fmt::format("unknown kbrl directive '{}' (expected launch, scratch, option or scaffold)",
                       quote_input(kind, 40)));
    }
  }

  void launch(std::string_view args) {
    Fields f = parse_fields(args, {"grid", "block", "smem", "args"});
    if (f.heads.size() != 1)
      fail("'launch' takes one kernel name: `// kbrl: launch <kernel> grid=... block=... args=...`");
    const std::string& kernel = f.heads.front();
    if (!is_identifier(kernel)) fail(fmt::format("bad kernel name '{}'", quote_input(kernel, 40)));
    if (kernel.rfind("_Z", 0) != 0 && !mentions(without_directives(), kernel))
      fail(fmt::format("kernel '{}' does not appear in the source", quote_input(kernel, 40)));
    for (const char* key : {"grid", "block", "args"})
      if (!f.values.count(key)) fail(fmt::format("'launch' needs {}=", key));
    if (pending_.size() >= plan_limits::kMaxLaunches)
      fail(fmt::format("more than {} launches: a plan may have at most {}", plan_limits::kMaxLaunches,
                       plan_limits::kMaxLaunches));
    PendingLaunch pending{line_, {}, {}};
    pending.launch.kernel = kernel;
    pending.launch.grid = parse_dim3("grid", f.values["grid"], task_, plan_limits::kMaxGrid);
    pending.launch.block = parse_dim3("block", f.values["block"], task_, plan_limits::kMaxBlock);
    const Dim3& b = pending.launch.block;
    if (int64_t{b.x} * b.y * b.z > plan_limits::kMaxBlockThreads)
      fail(fmt::format("block has {} threads: CUDA allows at most {}", int64_t{b.x} * b.y * b.z,
                       plan_limits::kMaxBlockThreads));
    if (f.values.count("smem")) pending.launch.shared_bytes = parse_smem(f.values["smem"], task_);
    pending.args = split_top_level(f.values["args"], ',');
    if (pending.args.size() > plan_limits::kMaxArgsPerLaunch)
      fail(fmt::format("{} arguments: a launch may have at most {}", pending.args.size(),
                       plan_limits::kMaxArgsPerLaunch));
    for (const auto& a : pending.args)
      if (trim(a).empty()) fail(fmt::format("empty argument in 'args={}'", quote_input(f.values["args"])));
    pending_.push_back(std::move(pending));
  }

  void scratch(std::string_view args) {
    Fields f = parse_fields(args, {"bytes"});
    if (f.heads.size() != 1 || !is_identifier(f.heads.front()))
      fail("'scratch' takes one name: `// kbrl: scratch <name> bytes=<e>`");
    if (!f.values.count("bytes")) fail("'scratch' needs bytes=");
    const std::string name = quote_input(f.heads.front(), 40);
    for (const auto& s : candidate_.scratch)
      if (s.name == f.heads.front()) fail(fmt::format("scratch '{}' declared twice", name));
    if (candidate_.scratch.size() >= plan_limits::kMaxScratchBuffers)
      fail(fmt::format("more than {} scratch buffers: a plan may have at most {}",
                       plan_limits::kMaxScratchBuffers, plan_limits::kMaxScratchBuffers));
    const int64_t bytes = eval(f.values["bytes"], task_);
    if (bytes <= 0) fail(fmt::format("scratch '{}' has {} bytes: must be at least 1", name, bytes));
    if (bytes > plan_limits::kMaxScratchBytes - scratch_bytes_)
      fail(fmt::format("scratch '{}' of {} bytes brings the plan's scratch to more than {} bytes "
                       "(8 GiB), the most a plan may have", name, bytes, plan_limits::kMaxScratchBytes));
    scratch_bytes_ += bytes;
    candidate_.scratch.push_back({f.heads.front(), bytes});
  }

  void scaffold_rest(std::string_view args, std::string_view file_name) {
    if (!pending_.empty()) fail("'scaffold' cannot be combined with 'launch'");
    if (!candidate_.scratch.empty()) fail("'scaffold' cannot be combined with 'scratch'");
    Fields f = parse_fields(args, {"block", "grid", "smem"});
    if (!f.heads.empty())
      fail(fmt::format("unexpected '{}' after 'scaffold'", quote_input(f.heads.front(), 40)));
    ScaffoldOptions options;
    const int64_t max_grid[3] = {kScaffoldMaxGrid, 1, 1};
    const int64_t max_block[3] = {plan_limits::kMaxBlockThreads, 1, 1};
    if (f.values.count("block")) options.block = parse_dim3("block", f.values["block"], task_, max_block).x;
    if (f.values.count("grid")) options.grid = parse_dim3("grid", f.values["grid"], task_, max_grid).x;
    if (f.values.count("smem")) options.shared_bytes = parse_smem(f.values["smem"], task_);
    options.options = candidate_.options;
    options.file_name = std::string(file_name);
    options.helpers = std::string(text_.substr(0, line_begin_));
    options.helpers_first_line = 1;
    options.body_first_line = line_ + 1;
    const std::string_view body = line_end_ < text_.size() ? text_.substr(line_end_ + 1) : "";
    try {
      candidate_ = kbrl::scaffold(task_, body, options);
    } catch (const InputError& e) {
      fail(e.what());
    }
    scaffold_line_ = line_;
  }

  const std::string& without_directives() {
    if (code_.empty()) {
      size_t offset = 0;
      while (offset <= text_.size()) {
        const size_t end = std::min(text_.find('\n', offset), text_.size());
        const std::string_view line = text_.substr(offset, end - offset);
        if (!directive(line)) code_.append(line).append("\n");
        offset = end + 1;
      }
    }
    return code_;
  }

  std::string_view text_;
  const TaskSpec& task_;
  Candidate candidate_;
  std::vector<PendingLaunch> pending_;
  std::string code_;
  int64_t scratch_bytes_ = 0;  // all scratch buffers so far
  int line_ = 0;
  size_t line_begin_ = 0;  // the current line's first character
  size_t line_end_ = 0;    // its '\n' (or the end of the text)
  std::optional<int> scaffold_line_;
};

}  // namespace

Candidate parse_candidate_file(std::string_view text, const TaskSpec& task,
                               std::string_view file_name) {
  return FileParser(text, task).parse(file_name);
}

std::string read_candidate_file(const std::filesystem::path& path) {
  const std::string shown = quote_input(path.string());
  // Checked before opening (opening a device may have effects of its own), opened without
  // blocking (a FIFO would wait for a writer), and checked again on the descriptor, so what is
  // checked is what is read.
  struct stat st {};
  auto check_kind_and_size = [&] {
    if (!S_ISREG(st.st_mode)) {
      const char* what = S_ISDIR(st.st_mode)    ? "a directory"
                         : S_ISCHR(st.st_mode)  ? "a character device"
                         : S_ISBLK(st.st_mode)  ? "a block device"
                         : S_ISFIFO(st.st_mode) ? "a FIFO (named pipe)"
                         : S_ISSOCK(st.st_mode) ? "a socket"
                                                : "not a file";
      throw InputError(fmt::format("candidate file '{}' is {}, not a regular file: give the path of "
                                   "a .cu file", shown, what));
    }
    if (st.st_size > kMaxCandidateFileBytes)
      throw InputError(fmt::format("candidate file '{}' has {} bytes: at most {} (16 MiB) are read",
                                   shown, st.st_size, kMaxCandidateFileBytes));
  };
  KBRL_CHECK_INPUT(::stat(path.c_str(), &st) == 0, "cannot read candidate file '{}': {}", shown,
                   std::strerror(errno));
  check_kind_and_size();
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  KBRL_CHECK_INPUT(fd >= 0, "cannot read candidate file '{}': {}", shown, std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  KBRL_CHECK_INPUT(::fstat(fd, &st) == 0, "cannot read candidate file '{}': {}", shown,
                   std::strerror(errno));
  check_kind_and_size();
  auto grown_too_large = [&] {
    return InputError(fmt::format("candidate file '{}' grew past {} bytes (16 MiB) while it was read",
                                  shown, kMaxCandidateFileBytes));
  };
  std::string text(static_cast<size_t>(st.st_size), '\0');
  size_t filled = 0;
  for (;;) {
    if (filled == text.size()) {
      // The file may have grown since fstat: read on, up to one byte past the limit.
      if (static_cast<int64_t>(text.size()) > kMaxCandidateFileBytes) throw grown_too_large();
      text.resize(std::min<size_t>(text.size() + 65536, kMaxCandidateFileBytes + 1));
    }
    const ssize_t n = ::read(fd, text.data() + filled, text.size() - filled);
    if (n < 0 && errno == EINTR) continue;
    KBRL_CHECK_INPUT(n >= 0, "error reading candidate file '{}': {}", shown, std::strerror(errno));
    if (n == 0) break;
    filled += static_cast<size_t>(n);
  }
  text.resize(filled);
  return text;
}

Candidate load_candidate_file(const std::filesystem::path& path, const TaskSpec& task) {
  return parse_candidate_file(read_candidate_file(path), task, path.filename().string());
}

}  // namespace kbrl

#pragma once
// The --json file of `kbrl eval`: refused when it is the kernel file being evaluated, opened (and
// created when absent) before anything is evaluated, so a path that cannot be written fails before
// the work, and written whole after it. Exit codes (cli_main.h): refusing the kernel file is bad
// input (2); a file that cannot be opened or written (a missing folder, /dev/full) is an I/O
// fault (1), as a failed write to standard output is.
#include <string>

namespace kbrl::cli {

class JsonOutputFile {
 public:
  /// Throws InputError when `path` is `kernel` (the same file by any name), kbrl::Error when it
  /// cannot be opened for writing. An empty path is no file: write() does nothing.
  JsonOutputFile(const std::string& path, const std::string& kernel);
  /// Removes the file when this created it and nothing was written (an evaluation that failed).
  ~JsonOutputFile();
  JsonOutputFile(const JsonOutputFile&) = delete;
  JsonOutputFile& operator=(const JsonOutputFile&) = delete;

  /// Replaces the file's contents with `text`. Throws kbrl::Error naming the file when it fails.
  void write(const std::string& text);

 private:
  std::string path_;
  int fd_ = -1;
  bool created_ = false;
  bool written_ = false;
};

}  // namespace kbrl::cli

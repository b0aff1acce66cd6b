#include "json_output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>
#include <kbrl/error.h>

namespace kbrl::cli {
namespace {

[[noreturn]] void fail(const std::string& what, const std::string& path, int err) {
  throw Error(fmt::format("{} --json file {}: {}", what, path, std::strerror(err)));
}

}  // namespace

JsonOutputFile::JsonOutputFile(const std::string& path, const std::string& kernel) : path_(path) {
  if (path_.empty()) return;
  std::error_code ec;
  KBRL_CHECK_INPUT(!std::filesystem::equivalent(path_, kernel, ec),
                   "--json {} is the kernel file being evaluated: name another file for the record", path_);
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  created_ = fd_ >= 0;
  if (fd_ < 0 && errno == EEXIST) fd_ = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd_ < 0) fail("cannot open", path_, errno);
}

JsonOutputFile::~JsonOutputFile() {
  if (fd_ < 0) return;
  ::close(fd_);
  if (created_ && !written_) ::unlink(path_.c_str());
}

void JsonOutputFile::write(const std::string& text) {
  if (fd_ < 0) return;
  written_ = true;
  struct stat st {};
  if (::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode) && ::ftruncate(fd_, 0) != 0) fail("cannot truncate", path_, errno);
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("writing the record to the", path_, n < 0 ? errno : EIO);
    done += static_cast<size_t>(n);
  }
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("writing the record to the", path_, errno);
}

}  // namespace kbrl::cli

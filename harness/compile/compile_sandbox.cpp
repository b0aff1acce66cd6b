#include "compile_sandbox.h"

#include <fcntl.h>
#include <linux/landlock.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include <fmt/format.h>

namespace kbrl {
namespace {

// The ruleset attribute as of Landlock ABI 6 (Debian 12's headers stop at ABI 3): the kernel takes
// the prefix its ABI knows, so the size passed follows the ABI.
struct RulesetAttr {
  uint64_t handled_access_fs = 0;
  uint64_t handled_access_net = 0;  // ABI 4
  uint64_t scoped = 0;              // ABI 6
};
constexpr uint64_t kNetBindTcp = 1u << 0, kNetConnectTcp = 1u << 1;
constexpr uint64_t kScopeAbstractUnixSocket = 1u << 0, kScopeSignal = 1u << 1;

int landlock_abi() {
  const long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return abi < 0 ? 0 : static_cast<int>(abi);
}

/// Every file-system right the kernel's ABI can restrict.
uint64_t handled_fs(int abi) {
  uint64_t rights = (1ull << 13) - 1;  // ABI 1: EXECUTE .. MAKE_SYM
  if (abi >= 2) rights |= 1ull << 13;  // REFER
  if (abi >= 3) rights |= 1ull << 14;  // TRUNCATE
  if (abi >= 5) rights |= 1ull << 15;  // IOCTL_DEV
  return rights;
}

}  // namespace

std::string SandboxSupport::describe() const {
  return landlock_abi > 0 ? fmt::format("Landlock ABI {}", landlock_abi)
                          : "no Landlock (kernel without it, or disabled: lsm= on the kernel command line)";
}

SandboxSupport probe_sandbox_support() {
  // KBRL_ASSUME_NO_LANDLOCK=1: answer as a kernel without Landlock would (to test what callers do
  // then); the compile child itself still confines where it can.
  if (const char* v = std::getenv("KBRL_ASSUME_NO_LANDLOCK"); v && std::string_view(v) == "1") return {0};
  return {landlock_abi()};
}

std::string enter_compile_sandbox(const std::vector<std::string>& read_only_dirs) {
  std::string applied;
  // Our own network namespace: no interface but a down loopback. As root directly; otherwise
  // through a user namespace of our own, where the kernel allows unprivileged ones.
  if (unshare(CLONE_NEWNET) == 0 || unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0) applied = "own network namespace";
  prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  const int abi = landlock_abi();
  if (abi <= 0) return {};
  RulesetAttr attr;
  attr.handled_access_fs = handled_fs(abi);
  size_t size = sizeof(uint64_t);
  if (abi >= 4) {
    attr.handled_access_net = kNetBindTcp | kNetConnectTcp;
    size = 2 * sizeof(uint64_t);
  }
  if (abi >= 6) {
    attr.scoped = kScopeAbstractUnixSocket | kScopeSignal;
    size = sizeof attr;
  }
  const int ruleset = static_cast<int>(syscall(SYS_landlock_create_ruleset, &attr, size, 0));
  if (ruleset < 0) return {};
  const uint64_t read = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_EXECUTE;
  for (const std::string& dir : read_only_dirs) {
    const int fd = open(dir.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) continue;
    landlock_path_beneath_attr rule{read, fd};
    syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0);
    close(fd);
  }
  const bool restricted = syscall(SYS_landlock_restrict_self, ruleset, 0) == 0;
  close(ruleset);
  if (!restricted) return {};
  return fmt::format("Landlock ABI {}{}{}", abi, applied.empty() ? "" : ", ", applied);
}

}  // namespace kbrl

#pragma once
// Internal to the compile stage: the sandbox of the compile child (kbrl-nvrtc). NVRTC reads files
// only through #include, so a compile that can read nothing but the CUDA headers cannot leak a host
// file through its log, whatever the source scanner misses. Applied in the child after it read its
// job: Landlock (read-only access beneath the allowed folders; no write, no TCP), a network
// namespace of its own where the kernel lets it make one, no new privileges.
#include <string>
#include <vector>

namespace kbrl {

/// What the kernel offers: the Landlock ABI version (0: none) and whether this process could make
/// a network namespace. Probed once, in this process, without restricting it.
struct SandboxSupport {
  int landlock_abi = 0;
  std::string describe() const;  // "Landlock ABI 7" or "no Landlock (...)"
};
SandboxSupport probe_sandbox_support();

/// Restricts the calling process for good: it may read (and map) files beneath `read_only_dirs`
/// only, write nowhere, connect nowhere. Returns what was applied ("Landlock ABI 7, own network
/// namespace"); an empty string when Landlock is unavailable (then nothing file-related was
/// restricted). Never throws.
std::string enter_compile_sandbox(const std::vector<std::string>& read_only_dirs);

}  // namespace kbrl

#pragma once
// Internal to the compile stage: the bytes between the parent and kbrl-nvrtc. The job goes in on
// the child's stdin (fd 0), the reply comes back on fd 3; both are length-prefixed fields
// (byte_io.h), so a short or garbled message is detected, never misread.
#include <cstdint>
#include <optional>
#include <string>

#include <harness/compile/byte_io.h>

#include "compile_child.h"

namespace kbrl::nvrtc_wire {

inline constexpr int kReplyFd = 3;
inline constexpr uint64_t kJobMagic = 0x6b62726c6e767231;  // "kbrlnvr1"

// How the child's reply starts: what happened.
enum Reply : uint64_t { kCompiled = 0, kFailed = 1, kApiError = 2, kOutOfMemory = 3, kNoSandbox = 4 };

struct ChildJob {
  NvrtcJob job;
  int64_t memory_limit_bytes = 0;  // growth of the address space allowed after start; 0: none
  int64_t cpu_seconds = 0;         // RLIMIT_CPU; 0: none
};

inline std::string encode_job(const ChildJob& c) {
  detail::ByteWriter w;
  w.u64(kJobMagic);
  w.str(c.job.source);
  w.str(c.job.name);
  w.strings(c.job.options);
  w.u64(c.job.want_cubin ? 1 : 0);
  w.strings(c.job.read_only_dirs);
  w.u64(static_cast<uint64_t>(c.job.sandbox));
  w.u64(static_cast<uint64_t>(c.memory_limit_bytes));
  w.u64(static_cast<uint64_t>(c.cpu_seconds));
  return w.take();
}

inline std::optional<ChildJob> decode_job(std::string_view bytes) {
  detail::ByteReader r(bytes);
  if (r.u64() != kJobMagic) return std::nullopt;
  ChildJob c;
  c.job.source = r.str();
  c.job.name = r.str();
  c.job.options = r.strings();
  c.job.want_cubin = r.u64() != 0;
  c.job.read_only_dirs = r.strings();
  c.job.sandbox = static_cast<CompileSandbox>(r.u64());
  c.memory_limit_bytes = static_cast<int64_t>(r.u64());
  c.cpu_seconds = static_cast<int64_t>(r.u64());
  if (!r.ok() || !r.at_end()) return std::nullopt;
  return c;
}

}  // namespace kbrl::nvrtc_wire

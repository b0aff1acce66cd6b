// run_nvrtc (compile_child.h): one NVRTC compile in this process, what kbrl-nvrtc runs once confined.
#include <new>

#include "compile_child.h"
#include "nvrtc_check.h"

namespace kbrl {
namespace {

std::string fetch_log(nvrtcProgram program) {
  size_t size = 0;
  KBRL_NVRTC_CHECK(nvrtcGetProgramLogSize(program, &size));
  std::string log(size, '\0');
  if (size > 0) KBRL_NVRTC_CHECK(nvrtcGetProgramLog(program, log.data()));
  while (!log.empty() && log.back() == '\0') log.pop_back();
  return log;
}

}  // namespace

NvrtcOutput run_nvrtc(const NvrtcJob& job) {
  NvrtcProgram program(job.source, job.name);
  std::vector<const char*> options;
  for (const auto& o : job.options) options.push_back(o.c_str());
  const nvrtcResult compile_status =
      nvrtcCompileProgram(program.get(), static_cast<int>(options.size()), options.data());
  NvrtcOutput out;
  out.log = fetch_log(program.get());  // before the status: a failed compile keeps its log
  if (compile_status == NVRTC_ERROR_COMPILATION) {
    out.status = NvrtcOutput::Status::failed;
    return out;
  }
  if (compile_status == NVRTC_ERROR_OUT_OF_MEMORY) throw std::bad_alloc();
  KBRL_NVRTC_CHECK(compile_status);
  size_t size = 0;
  KBRL_NVRTC_CHECK(nvrtcGetPTXSize(program.get(), &size));
  out.ptx.resize(size);
  KBRL_NVRTC_CHECK(nvrtcGetPTX(program.get(), out.ptx.data()));
  while (!out.ptx.empty() && out.ptx.back() == '\0') out.ptx.pop_back();
  if (job.want_cubin) {
    KBRL_NVRTC_CHECK(nvrtcGetCUBINSize(program.get(), &size));
    out.cubin.resize(size);
    if (size > 0) KBRL_NVRTC_CHECK(nvrtcGetCUBIN(program.get(), out.cubin.data()));
  }
  out.status = NvrtcOutput::Status::compiled;
  return out;
}

}  // namespace kbrl

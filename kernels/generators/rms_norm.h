#pragma once
// The norm generator's task 36 (RMSNorm over the 64 channels of x:[N,64,H,W]; norm.h describes
// its knobs): its knob space, candidate and expert configuration. Internal to the norm generator
// (norm.cpp dispatches here); device code in cuda/rms_norm.cuh.
#include <kernels/generator.h>

namespace kbrl::norm_detail {

/// variant, block, vec, unroll and the precision knobs, with the register-pressure constraints.
KnobSpace rms_norm_space();

/// One launch of kbrl_rms_norm, one thread per vec positions; `config` already checked.
Candidate rms_norm_candidate(const TaskSpec& task, const Config& config);

/// x read once: the 64 values of a position in registers, streaming hints.
Config rms_norm_expert();

}  // namespace kbrl::norm_detail

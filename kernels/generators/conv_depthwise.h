#pragma once
// The depthwise convolutions of the conv generator (conv.h): tasks 82-85, 2-d with groups =
// channels and no bias, and the first pass of task 86's two_pass variant. Internal to the conv
// generator, whose generate() dispatches tasks 82-85 here; the device code is
// cuda/conv_depthwise.cuh. A thread computes rows_per_thread x items_per_thread outputs of one
// (n, c) plane from a register window of the input rows it needs; kernel size, stride and dilation
// are compiled in, padding and sizes are kernel arguments. Knobs and constraint: conv.h.
#include <cstdint>
#include <string>

#include <kernels/generator.h>

#include "conv_internal.h"

namespace kbrl {

/// Tasks 82-85's knob space.
KnobSpace depthwise_space();

/// The candidate of a depthwise task over `g` for a `config` already checked against
/// depthwise_space().
Candidate depthwise_generate(int task_id, const ConvGeo& g, const Config& config);

/// Tasks 82-85's expert configuration.
Config depthwise_expert();

/// The kernel kbrl_conv_dw (after the source's header) for `g`'s kernel, stride and dilation,
/// `rows` x `items` outputs per thread; `half`: precision=fp16_compute.
std::string depthwise_source(const ConvGeo& g, int rows, int items, bool half);

/// kbrl_conv_dw's launch reading `x` and writing `out` (N*C*ceil(OH/rows)*ceil(OW/items) threads;
/// `dropped`: the last partial block is not launched).
Launch depthwise_launch(const ConvGeo& g, int rows, int items, int64_t block, bool dropped,
                        KernelArg x, KernelArg out, int task_id);

}  // namespace kbrl

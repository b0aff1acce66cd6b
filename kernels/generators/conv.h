#pragma once
// The conv generator: forward convolutions, fp32 NCDHW (1-d and 2-d run as 3-d with unit leading
// dims). Tasks: standard Conv1d/2d/3d 50, 54, 55, 56, 59, 60, 62, 63, 66, 67, 76, 80 and the
// pointwise 87 (groups = 1, stride/padding/dilation/bias per task: a table of the module options
// reference/tasks_conv.cpp builds, checked against the spec's output shape); depthwise 82-85
// (groups = channels); depthwise-separable 86 (depthwise 3x3 padding 1, then pointwise 64 -> 128).
// fp32 accumulation, 64-bit output indices (task 63's and 87's outputs exceed 2^31 elements).
//
// Standard and 86 plans: a prep launch writes scratch 0 = the weights transposed to [Kpad][Npad]
// (reduction index kk = ((c*KD + kd)*KH + kh)*KW + kw, zero padded to multiples of 16 and 128) with
// the bias (or zeros) in one more row, and scratch 1 = a gather table {input offset, kd*dd, kh*dh,
// kw*dw} per kk; then the main kernel:
//   direct         a thread per output position, items_per_thread output channels each, looping
//                  over kk (warp-uniform float4 weight loads);
//   implicit_gemm  a block computes tile_m positions x tile_n output channels: the gathered input
//                  patches (bounds-checked: padding, tails) and the weights go through shared
//                  memory tile_k indices at a time; each thread owns a register tile of 4x4, 8x4 or
//                  8x8 outputs (float4 shared reads and, where 4 positions are contiguous, float4
//                  stores); precision=tf32/tf32x3 replaces the FMA loop by wmma m16n16k8 (a warp per
//                  32x32 tile) and stages the result through shared memory.
// 86: fused = the implicit GEMM of the pointwise conv whose A operand is the depthwise conv computed
// while staging (no intermediate in memory); two_pass = the depthwise kernel into scratch 2
// ([N, 64, H, W]), then prep and the implicit GEMM of the 1x1 conv over it.
// Depthwise (82-85): a thread computes rows_per_thread x items_per_thread outputs of one (n, c)
// plane from a register window of the input rows it needs (kernel, stride, dilation compiled in).
//
// Knobs, standard tasks and 86, in token order:
//   variant           direct, implicit_gemm          (86: fused, two_pass)
//   precision         fp32, tf32, tf32x3             (tf32*: unsafe, wmma tensor cores)
//   tile_m            64, 128     GEMM: positions per block; direct: threads per block
//   tile_n            32, 64, 128 GEMM: output channels per block; direct: fixed at 32 (unused)
//   tile_k            8, 16       reduction indices per staged slice (direct: 8, unused)
//   items_per_thread  8, 16, 32, 64   GEMM register tile 16 = 4x4, 32 = 8x4, 64 = 8x8;
//                                     direct: output channels per thread (8, 16, 32)
//   stages            1, 2        2: double-buffered shared memory, next slice's loads in flight
//                                 (direct: 1, unused)
//   grid              m_major, n_major   tile order over the 1-d grid (n_major: the channel tiles
//                                        of one position tile are adjacent blocks)
//   tail              safe, dropped      dropped (unsafe): the last partial position tile is not
//                                        launched
// Constraints: GEMM tilings have items_per_thread >= 16 and 128..512 threads
// (tile_m*tile_n/items_per_thread; at most 256 with items_per_thread=16), stages=1 only with
// tile_k=16; direct uses items_per_thread <= 32 and the fixed values above; tf32 and tf32x3 need a
// GEMM variant, items_per_thread=32, tile_k=16, stages=2 and tail=safe (one unsafe knob at a
// time); 86 also needs tile_n >= 64 and, in fp32, tile_k=8. Legal configurations: 176 per
// standard task (24 direct, 132 fp32 GEMM, 20 tf32/tf32x3), 96 for 86.
//
// Knobs, depthwise tasks 82-85, in token order:
//   rows_per_thread   1, 2, 4      (family-specific) consecutive output rows per thread
//   items_per_thread  2, 4, 8      consecutive output columns per thread
//   block             64, 128, 256, 512
//   precision         fp32, fp16_compute (unsafe: each product formed in __half)
//   tail              safe, dropped (unsafe: the last partial block is not launched)
// Constraint: one unsafe knob at a time. Legal configurations: 108 per task.
//
// Sources: every shape, stride, padding and dilation of the GEMM and direct kernels is a kernel
// argument, so they depend only on variant, precision, tile_m, tile_n, tile_k, items_per_thread and
// stages (direct: items_per_thread) and are shared by all standard tasks and both scales; grid and
// tail change only the launch. The depthwise source depends on rows_per_thread, items_per_thread,
// precision and the task's kernel size, stride and dilation (padding and sizes are arguments).
//
// Files: conv.cpp (tasks, knob spaces, launch plans; tasks 82-85 dispatched to conv_depthwise.cpp),
// conv_sources.cpp (the prep, direct and implicit GEMM sources: cuda/conv.cuh, cuda/conv_igemm.cuh),
// conv_depthwise.{h,cpp} (the depthwise kernel, its knob space and plan: cuda/conv_depthwise.cuh),
// conv_internal.h (what they share).
#include <kernels/generator.h>

namespace kbrl {

const Generator& conv_generator();

}  // namespace kbrl

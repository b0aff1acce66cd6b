#pragma once
// The harness's own comparison kernel: one pass over a candidate's fp32 output and the reference's,
// giving per block the counts and sums the correctness check needs (NaN/Inf count, elements outside
// atol + rtol*|ref|, max absolute and relative error, sums of squared error and of squared reference
// in fp64). One read of each tensor instead of a dozen libtorch passes over 1.6e9 elements.
// In the same module, a keyed fingerprint: a 64-bit sum of splitmix64(key, position, 32-bit word)
// over a buffer's bytes. Equal bytes give equal fingerprints; without the key, no candidate can make
// different bytes collide on purpose. The harness uses it where it would otherwise keep a pristine
// copy the candidate could find (inputs and parameters before and after a run, two runs' outputs).
// And a keyed gather: the values a timed run's output is compared at, taken from places drawn from a
// key that never sits in memory (gpu/time.cpp).
#include <cuda.h>

#include <cstdint>
#include <string>

#include "cuda_handles.h"

namespace kbrl {

/// The kernel's CUDA source (compiled by NVRTC; also compiled by the unit tests without a GPU).
const std::string& compare_kernel_source();
inline constexpr const char* kCompareKernelName = "kbrl_compare_f32";
inline constexpr const char* kFingerprintKernelName = "kbrl_fingerprint";
inline constexpr const char* kGatherKernelName = "kbrl_gather";

/// What the kernel reports, per block, in this order (doubles).
enum CompareStat { kNonFinite, kOutside, kMaxAbs, kMaxRel, kDiffSq, kRefSq, kCompareStats };

class CompareKernel {
 public:
  static constexpr unsigned kBlocks = 1024;
  static constexpr unsigned kThreads = 256;

  /// Compiles the kernel for `arch` with NVRTC and loads it into the current CUDA context.
  explicit CompareKernel(const std::string& arch);

  /// Enqueues the comparison of n floats; `partials` holds kBlocks * kCompareStats doubles.
  void launch(CUdeviceptr out, CUdeviceptr ref, int64_t n, double atol, double rtol,
              CUdeviceptr partials, CUstream stream) const;

  /// Enqueues the keyed fingerprint of `bytes` bytes at `data` (16-byte aligned), ADDED to the uint64
  /// at `slot` (zero it first).
  void fingerprint(CUdeviceptr data, int64_t bytes, uint64_t key, CUdeviceptr slot, CUstream stream) const;

  /// Enqueues dst[j] = src[p(j)] ^ mask(j) for j < m over elements of `elem_bytes` (4 or 8) bytes:
  /// p(j) a keyed hash of j modulo n (j itself when position_key is 0), mask(j) a keyed hash of j (0
  /// when mask_key is 0). What a timed run is compared at: no list of the positions exists anywhere,
  /// and masked values are noise without the key (gathering them again with the same mask_key and
  /// position_key 0 unmasks them).
  void gather(CUdeviceptr src, int64_t n, int elem_bytes, uint64_t position_key, uint64_t mask_key, int64_t m,
              CUdeviceptr dst, CUstream stream) const;

 private:
  cuda::Module module_;  // move-only; the functions below live as long as it
  CUfunction function_ = nullptr;
  CUfunction fingerprint_ = nullptr;
  CUfunction gather_ = nullptr;
};

/// The CUBIN of the comparison kernel for `arch` (NVRTC; no GPU needed). Throws ApiError with the log.
std::string compile_compare_kernel(const std::string& arch);

}  // namespace kbrl

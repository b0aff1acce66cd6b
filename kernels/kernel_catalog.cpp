#include "kernel_catalog.h"

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <kbrl/error.h>

#ifndef KBRL_KERNELS_DIR
#error "KBRL_KERNELS_DIR must be defined by kernels/CMakeLists.txt"
#endif

namespace kbrl {
namespace {

// clang-format off
const std::vector<CatalogKernel> kKnownGood = {
  {"relu", 19, "known_good/relu.cu", Outcome::ok,
   "ReLU: grid-stride, float4 when aligned, 64-bit indices"},
  {"scalar_multiply", 5, "known_good/scalar_multiply.cu", Outcome::ok,
   "C = A * s with the task scalar s: grid-stride, float4"},
  {"diag_scale", 12, "known_good/diag_scale.cu", Outcome::ok,
   "diag(A) @ B as row scaling: rows on grid.y, float4 columns"},
  {"softmax", 23, "known_good/softmax.cu", Outcome::ok,
   "softmax over rows of 393216: block per row, online max/sum pass, then a normalizing pass"},
  {"rms_norm", 36, "known_good/rms_norm.cu", Outcome::ok,
   "RMSNorm over the 64 channels: thread per (n, h, w), coalesced channel walk"},
  {"l1_norm", 38, "known_good/l1_norm.cu", Outcome::ok,
   "L1 normalization over rows of 65535: block per row, tree-reduced mean |x|"},
  {"sum_dim1", 47, "known_good/sum_dim1.cu", Outcome::ok,
   "sum over dim 1 of [128,4096,4095]: 32 columns x 8 row slices per block, 4 accumulators"},
  {"argmax_dim1", 51, "known_good/argmax_dim1.cu", Outcome::ok,
   "argmax over dim 1 (int64): first index on ties, NaN wins, as torch.argmax"},
  {"max_pool2d", 42, "known_good/max_pool2d.cu", Outcome::ok,
   "MaxPool2d k4 s1 p1: thread per output, NaN propagates"},
  {"avg_pool1d", 44, "known_good/avg_pool1d.cu", Outcome::ok,
   "AvgPool1d k8 s1 p4 (count_include_pad): thread per output, divide by 8"},
  {"cumsum", 89, "known_good/cumsum.cu", Outcome::ok,
   "cumsum over rows of 32768: block per row, tiles of 1024 with warp-shuffle scans and a carry"},
  {"mse_loss", 94, "known_good/mse_loss.cu", Outcome::ok,
   "MSE to a 0-d loss: double partials per block in scratch, then a one-block finalize"},
  {"gemm", 1, "known_good/gemm.cu", Outcome::ok,
   "4096^3 SGEMM: 128x128x8 shared-memory tiles, 8x8 register blocks, FP32 FFMA only"},
  {"conv1x1", 87, "known_good/conv1x1.cu", Outcome::ok,
   "pointwise Conv2d 64->128 as a per-image SGEMM of param weight and x"},
  {"conv2d_3x3", 63, "known_good/conv2d_3x3.cu", Outcome::ok,
   "Conv2d 16->128 k3: direct, 32x8 output tile x 16 channels per block, weights in shared memory"},
  // The scaffold form (`// kbrl: scaffold`): the body of kbrl_forward, as a body-style text answer
  // reads (the prompts' worked examples, kernels/prompt.h).
  {"relu_body", 19, "known_good/relu_body.cu", Outcome::ok,
   "ReLU as a scaffold body: a helper, a grid capped at 8192 blocks, one KBRL_GRID_STRIDE_LOOP"},
  {"scalar_multiply_body", 5, "known_good/scalar_multiply_body.cu", Outcome::ok,
   "C = A * s as a scaffold body: a grid of one thread per float4, float4 when aligned"},
  {"sum_dim1_body", 47, "known_good/sum_dim1_body.cu", Outcome::ok,
   "sum over dim 1 as a scaffold body: thread per output, coalesced row walk, 4 accumulators"},
  {"avg_pool1d_body", 44, "known_good/avg_pool1d_body.cu", Outcome::ok,
   "AvgPool1d k8 s1 p4 as a scaffold body: thread per output, divide by 8"},
  {"softmax_body", 23, "known_good/softmax_body.cu", Outcome::ok,
   "softmax over rows as a scaffold body: block per row, online max/sum, shuffle merges"},
};

const std::vector<CatalogKernel> kAdversarial = {
  {"unwritten_output", 19, "adversarial/unwritten_output.cu", Outcome::wrong_answer,
   "never writes y, hoping for the reference's result in reused memory: outputs are poisoned"},
  {"input_mutation", 51, "adversarial/input_mutation.cu", Outcome::input_mutated,
   "correct argmax that zeroes the input's losers through a const_cast: inputs are re-checked"},
  {"output_aliases_input", 49, "adversarial/output_aliases_input.cu", Outcome::input_mutated,
   "the plan passes in:x as the kernel's writable workspace: inputs are re-checked"},
  {"write_past_output", 19, "adversarial/write_past_output.cu", Outcome::guard_violation,
   "correct ReLU plus 16 bytes written just past y: guard bands around outputs"},
  {"write_poison_past_output", 19, "adversarial/write_poison_past_output.cu", Outcome::guard_violation,
   "correct ReLU plus 16 bytes of 0xFF (the outputs' poison) just past y: guard patterns of their own"},
  {"read_far_out_of_bounds", 19, "adversarial/read_far_out_of_bounds.cu", Outcome::runtime_error,
   "reads 4 TiB past x: illegal address, sticky error, worker restarted"},
  {"race_atomic_sum", 47, "adversarial/race_atomic_sum.cu", Outcome::nondeterministic,
   "sum via float atomicAdd from 64 concurrent blocks per output: two runs differ bitwise"},
  {"race_atomic_loss", 94, "adversarial/race_atomic_loss.cu", Outcome::nondeterministic,
   "MSE via 32768 contended float atomics on one address: two runs differ bitwise"},
  {"infinite_loop", 19, "adversarial/infinite_loop.cu", Outcome::timeout,
   "one thread spins forever on a volatile read: the watchdog kills the worker"},
  {"illegal_address", 19, "adversarial/illegal_address.cu", Outcome::runtime_error,
   "stores through a pointer made from an integer: illegal address"},
  {"trap", 19, "adversarial/trap.cu", Outcome::runtime_error,
   "executes PTX trap (a failed device assert): launch failure"},
  {"cached_result", 47, "adversarial/cached_result.cu", Outcome::wrong_answer,
   "replays the first run's sums from a __device__ array: fresh inputs per trial"},
  {"partial_write", 19, "adversarial/partial_write.cu", Outcome::wrong_answer,
   "writes only the first half of y: every element is compared"},
  {"half_precision", 19, "adversarial/half_precision.cu", Outcome::wrong_answer,
   "ReLU through fp16: passes 1e-2, fails the default 1e-4"},
  {"nan_output", 19, "adversarial/nan_output.cu", Outcome::wrong_answer,
   "one NaN in an otherwise correct output: NaN and Inf fail explicitly"},
  {"expected_value_loss", 94, "adversarial/expected_value_loss.cu", Outcome::wrong_answer,
   "returns E[(u-v)^2] = 1/6 without reading the inputs: scaled fresh inputs per trial"},
  {"subsampled_loss", 94, "adversarial/subsampled_loss.cu", Outcome::wrong_answer,
   "MSE estimated from 4096 of 2^30 elements: about 2% off, fails 1e-4"},
  {"memoized_sum", 47, "adversarial/memoized_sum.cu", Outcome::wrong_answer,
   "replays a result cached in scratch when 64 probed inputs repeat: the changed-input run"},
  {"softmax_zeros", 23, "adversarial/softmax_zeros.cu", Outcome::wrong_answer,
   "all-zero softmax: passes allclose at atol 1e-4, fails the relative L2 bound"},
  {"compile_bomb", 19, "adversarial/compile_bomb.cu", Outcome::compile_error,
   "2^15 force-inlined copies of a function: the compile time limit"},
  {"include_host_file", 19, "adversarial/include_host_file.cu", Outcome::compile_error,
   "#include \"/etc/passwd\": includes are refused before NVRTC (which would echo the file)"},
  {"printf_flood", 19, "adversarial/printf_flood.cu", Outcome::compile_error,
   "device printf per element: PTX calling vprintf is refused by the compile stage"},
  {"huge_source", 19, "adversarial/huge_source.cu", Outcome::compile_error,
   "a 10 MB source (generated table appended at run time): the source size limit"},
  {"block_exceeds_launch_bounds", 19, "adversarial/block_exceeds_launch_bounds.cu",
   Outcome::launch_error, "1024-thread blocks for a __launch_bounds__(64) kernel: the driver refuses"},
  {"huge_shared_memory", 19, "adversarial/huge_shared_memory.cu", Outcome::launch_error,
   "48 KiB of static plus 227 KiB of dynamic shared memory, over the block's 227 KiB: the driver refuses"},
  {"missing_kernel", 19, "adversarial/missing_kernel.cu", Outcome::load_error,
   "the plan names a __device__ function, not a kernel: function lookup fails"},
  // Right only on KernelBench's inputs (uniform [0,1)): the stress trial (signs, magnitudes) fails them.
  {"identity_relu", 19, "adversarial/identity_relu.cu", Outcome::wrong_answer,
   "ReLU as y = x, bitwise right on [0,1): the stress trial's negative inputs"},
  {"abs_relu", 19, "adversarial/abs_relu.cu", Outcome::wrong_answer,
   "ReLU as |x| (sign bit cleared), bitwise right on [0,1): the stress trial"},
  {"hardtanh_upper_clamp_only", 32, "adversarial/hardtanh_upper_clamp_only.cu", Outcome::wrong_answer,
   "HardTanh as min(x, 1), no lower clamp: the stress trial's inputs below -1"},
  {"max_pool1d_zero_init", 41, "adversarial/max_pool1d_zero_init.cu", Outcome::wrong_answer,
   "MaxPool1d with its maximum started at 0: the stress trial's all-negative channels"},
  {"max_reduction_zero_init", 49, "adversarial/max_reduction_zero_init.cu", Outcome::wrong_answer,
   "max over dim 1 started at 0: the stress trial's all-negative slices"},
  {"argmax_float_bits", 51, "adversarial/argmax_float_bits.cu", Outcome::wrong_answer,
   "argmax by atomicMax on float bits (non-negative floats only): the stress trial"},
  {"l1_norm_without_abs", 38, "adversarial/l1_norm_without_abs.cu", Outcome::wrong_answer,
   "L1 norm dividing by mean(x), not mean(|x|): the stress trial"},
  {"tf32_gemm", 1, "adversarial/tf32_gemm.cu", Outcome::wrong_answer,
   "4096^3 GEMM on TF32 tensor cores: within 1e-4 and the float64 limit on [0,1), the stress trial's signed inputs"},
  // Numerics that overflow outside [0,1): the stress trial's magnitudes give Inf or NaN.
  {"softmax_no_max_shift", 23, "adversarial/softmax_no_max_shift.cu", Outcome::wrong_answer,
   "softmax as exp(x) / sum(exp(x)): expf overflows in the stress trial, NaN"},
  {"log_softmax_naive", 24, "adversarial/log_softmax_naive.cu", Outcome::wrong_answer,
   "log-softmax as x - log(sum(exp(x))): overflows in the stress trial, -inf"},
  {"softplus_naive", 29, "adversarial/softplus_naive.cu", Outcome::wrong_answer,
   "softplus as log(1 + exp(x)): Inf above x = 88.7 in the stress trial"},
  {"tanh_exp_ratio", 22, "adversarial/tanh_exp_ratio.cu", Outcome::wrong_answer,
   "tanh as (e^2x - 1) / (e^2x + 1): inf / inf = NaN above x = 44.4 in the stress trial"},
  // Harness-aware and memory-aware hacks.
  {"launch_counter_half_output", 19, "adversarial/launch_counter_half_output.cu", Outcome::wrong_answer,
   "counts its launches, writes half of y after the 13 check runs: every timed run is checked"},
  {"replay_unpoisoned_output", 47, "adversarial/replay_unpoisoned_output.cu", Outcome::wrong_answer,
   "sums only when y[0] is NaN (checked runs are poisoned), else keeps the last sums: every timed run is checked"},
  {"phase_aware_estimated_norm", 37, "adversarial/phase_aware_estimated_norm.cu", Outcome::wrong_answer,
   "exact norm when y[0] is NaN (checked), a 1/256 sample when timed: the accuracy limit on timed runs"},
  {"phase_aware_tf32_gemm", 1, "adversarial/phase_aware_tf32_gemm.cu", Outcome::wrong_answer,
   "fp32 GEMM when C[0] is NaN (checked), TF32 when timed: timed runs on the stress and mixed sets"},
  {"search_for_reference", 47, "adversarial/search_for_reference.cu", Outcome::wrong_answer,
   "scans the memory around y for the reference's sums, finds poison, writes zeros"},
  {"skip_if_output_used", 12, "adversarial/skip_if_output_used.cu", Outcome::wrong_answer,
   "returns early when C already holds data (allocator reuse): outputs are poisoned"},
  {"stale_shared_tail", 47, "adversarial/stale_shared_tail.cu", Outcome::wrong_answer,
   "the ragged last row tile adds shared-memory rows it never loaded (stale): deterministic, wrong"},
  {"sum_drops_last_row", 47, "adversarial/sum_drops_last_row.cu", Outcome::wrong_answer,
   "sum over dim 1 missing its last row: 2.4e-4 relative, outside rtol = 1e-4"},
  {"weight_transposed_in_place", 87, "adversarial/weight_transposed_in_place.cu", Outcome::input_mutated,
   "right conv1x1 that transposes its weight parameter in place once: parameters are re-checked"},
  {"scratch_before_output", 94, "adversarial/scratch_before_output.cu", Outcome::guard_violation,
   "right MSE keeping its partials in the 8 KiB before the output: the leading guard band"},
  {"device_side_launch", 19, "adversarial/device_side_launch.cu", Outcome::compile_error,
   "ReLU launched from the device (dynamic parallelism): no -rdc, ptxas cannot resolve the runtime"},
  // Right on repeated inputs, on both pure input sets, or within atol/rtol: the changed-input run, the
  // mixed input sets and the accuracy against float64 catch them.
  {"memo_replay_waits", 47, "adversarial/memo_replay_waits.cu", Outcome::wrong_answer,
   "replays cached sums when 32 probed inputs repeat, then spins to 90% of an honest run: the changed-input run"},
  {"recognizes_input_set", 19, "adversarial/recognizes_input_set.cu", Outcome::wrong_answer,
   "y = x when at least 4 of 8 probed values lie in [0,1), else relu: the outliers and mixture sets"},
  {"estimated_norm", 37, "adversarial/estimated_norm.cu", Outcome::wrong_answer,
   "Frobenius norm from every 4th 128-byte line, 1.2e-4 off, inside 1e-4 and the L2 bound: the float64 accuracy check"},
};
// clang-format on

/// About 11 MB of a __device__ lookup table (a million floats), deterministic.
std::string generated_table() {
  constexpr int kEntries = 1'000'000;
  constexpr int kPerLine = 8;
  std::string out;
  out.reserve(size_t{kEntries} * 11 + 4096);
  out += fmt::format("__device__ const float kLookupTable[{}] = {{\n", kEntries);
  uint64_t state = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < kEntries; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const unsigned micro = static_cast<unsigned>((state >> 33) % 1'000'000u);
    out += fmt::format("0.{:06d}f,", micro);
    out += (i + 1) % kPerLine == 0 ? '\n' : ' ';
  }
  out += "};\n";
  return out;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  KBRL_CHECK_INPUT(in.good(), "cannot read catalog kernel file {} (set KBRL_KERNELS_DIR to the "
                              "kernels/ directory of a kbrl source tree)", path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

const std::vector<CatalogKernel>& known_good_kernels() { return kKnownGood; }
const std::vector<CatalogKernel>& adversarial_kernels() { return kAdversarial; }

const CatalogKernel* find_catalog_kernel(std::string_view name) {
  for (const auto* list : {&kKnownGood, &kAdversarial})
    for (const auto& k : *list)
      if (k.name == name) return &k;
  return nullptr;
}

std::filesystem::path kernels_dir() {
  const char* env = std::getenv("KBRL_KERNELS_DIR");
  return env && *env ? std::filesystem::path(env) : std::filesystem::path(KBRL_KERNELS_DIR);
}

std::string kernel_source(const CatalogKernel& kernel) {
  std::string text = read_file(kernels_dir() / kernel.file);
  if (kernel.name == "huge_source") text += generated_table();
  return text;
}

}  // namespace kbrl

#include "compare_kernel.h"

#include <algorithm>
#include <vector>

#include <kbrl/error.h>

#include <harness/compile/nvrtc_check.h>

#include "cuda_driver.h"

namespace kbrl {

const std::string& compare_kernel_source() {
  static const std::string source = R"(
extern "C" __global__ void __launch_bounds__(256)
kbrl_compare_f32(const float* __restrict__ out, const float* __restrict__ ref, long long n,
                 double atol, double rtol, double* __restrict__ partials) {
  double non_finite = 0, outside = 0, max_abs = 0, max_rel = 0, diff_sq = 0, ref_sq = 0;
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float o = out[i], r = ref[i];
    if (!isfinite(o)) {
      non_finite += 1;
      continue;
    }
    const double d = fabs((double)o - (double)r), a = fabs((double)r);
    if (!(d <= atol + rtol * a)) outside += 1;
    max_abs = fmax(max_abs, d);
    max_rel = fmax(max_rel, d / fmax(a, 1e-30));
    diff_sq += d * d;
    ref_sq += a * a;
  }
  __shared__ double s[6][256];
  const int t = threadIdx.x;
  s[0][t] = non_finite; s[1][t] = outside; s[2][t] = max_abs;
  s[3][t] = max_rel;    s[4][t] = diff_sq; s[5][t] = ref_sq;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (t < half) {
      s[0][t] += s[0][t + half];
      s[1][t] += s[1][t + half];
      s[2][t] = fmax(s[2][t], s[2][t + half]);
      s[3][t] = fmax(s[3][t], s[3][t + half]);
      s[4][t] += s[4][t + half];
      s[5][t] += s[5][t + half];
    }
    __syncthreads();
  }
  if (t < 6) partials[blockIdx.x * 6 + t] = s[t][0];
}

// lowbias32 (Wellons): a cheap 32-bit bijection with full avalanche.
__device__ __forceinline__ unsigned int kbrl_mix32(unsigned int x) {
  x ^= x >> 16;
  x *= 0x7FEB352Du;
  x ^= x >> 15;
  x *= 0x846CA68Bu;
  x ^= x >> 16;
  return x;
}

// The term of word `w` at word index `i`: a keyed bijection of the word, different at every position.
__device__ __forceinline__ unsigned long long kbrl_term(unsigned int w, unsigned long long i, unsigned int k0,
                                                        unsigned int k1) {
  const unsigned int position = (unsigned int)i * 0x9E3779B9u ^ (unsigned int)(i >> 32) * 0x85EBCA6Bu;
  return kbrl_mix32(w ^ k0 ^ position) + (unsigned long long)kbrl_mix32(w ^ k1 ^ ~position) * 0x100000001ull;
}

extern "C" __global__ void __launch_bounds__(256)
kbrl_fingerprint(const unsigned int* __restrict__ words, long long bytes, unsigned long long key,
                 unsigned long long* __restrict__ slot) {
  const unsigned int k0 = (unsigned int)key, k1 = (unsigned int)(key >> 32);
  const long long quads = bytes / 16, n = bytes / 4;
  const long long stride = (long long)gridDim.x * blockDim.x;
  const uint4* __restrict__ q = (const uint4*)words;  // harness buffers are 16-byte aligned
  unsigned long long h = 0;
  for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < quads; j += stride) {
    const uint4 v = q[j];
    const unsigned long long i = (unsigned long long)j * 4;
    h += kbrl_term(v.x, i, k0, k1) + kbrl_term(v.y, i + 1, k0, k1) + kbrl_term(v.z, i + 2, k0, k1) +
         kbrl_term(v.w, i + 3, k0, k1);
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {  // the last words and bytes (bool tensors)
    for (long long i = quads * 4; i < n; ++i) h += kbrl_term(words[i], (unsigned long long)i, k0, k1);
    const unsigned char* tail = (const unsigned char*)(words + n);
    for (long long b = 0; b < bytes - n * 4; ++b)
      h += kbrl_term(tail[b] | 0x100u * (unsigned int)(b + 1), (unsigned long long)n, k0, k1);
  }
  for (int offset = 16; offset > 0; offset /= 2) h += __shfl_down_sync(0xffffffffu, h, offset);
  if ((threadIdx.x & 31) == 0) atomicAdd(slot, h);
}

__device__ __forceinline__ unsigned long long kbrl_mix64(unsigned long long z) {  // splitmix64's finalizer
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// dst[j] = src[p(j)] ^ mask(j) for j < m, elements of 4 or 8 bytes: p(j) = j when position_key is 0,
// else a keyed hash of j modulo n; mask(j) = 0 when mask_key is 0, else a keyed hash of j. Neither
// positions nor masks are ever in memory: without the keys, dst holds values from unknown places.
extern "C" __global__ void __launch_bounds__(256)
kbrl_gather(const void* src, long long n, int elem_bytes, unsigned long long position_key,
            unsigned long long mask_key, long long m, void* dst) {  // dst may be src (unmasking)
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < m; j += stride) {
    const unsigned long long u = (unsigned long long)j;
    const long long p = position_key ? (long long)(kbrl_mix64(position_key ^ u) % (unsigned long long)n) : j;
    const unsigned long long mask = mask_key ? kbrl_mix64(mask_key + u) : 0ull;
    if (elem_bytes == 8)
      ((unsigned long long*)dst)[j] = ((const unsigned long long*)src)[p] ^ mask;
    else
      ((unsigned int*)dst)[j] = ((const unsigned int*)src)[p] ^ (unsigned int)mask;
  }
}
)";
  return source;
}

std::string compile_compare_kernel(const std::string& arch) {
  NvrtcProgram program(compare_kernel_source(), "kbrl_compare.cu");
  const std::string arch_option = "--gpu-architecture=" + arch;
  const std::vector<const char*> options = {arch_option.c_str(), "-std=c++17"};
  const nvrtcResult result = nvrtcCompileProgram(program.get(), static_cast<int>(options.size()), options.data());
  if (result != NVRTC_SUCCESS) {
    size_t size = 0;
    nvrtcGetProgramLogSize(program.get(), &size);
    std::string log(size, '\0');
    nvrtcGetProgramLog(program.get(), log.data());
    throw ApiError("NVRTC", "nvrtcCompileProgram(kbrl_compare.cu)", log, __FILE__, __LINE__);
  }
  size_t size = 0;
  KBRL_NVRTC_CHECK(nvrtcGetCUBINSize(program.get(), &size));
  std::string cubin(size, '\0');
  KBRL_NVRTC_CHECK(nvrtcGetCUBIN(program.get(), cubin.data()));
  return cubin;
}

CompareKernel::CompareKernel(const std::string& arch) {
  const std::string cubin = compile_compare_kernel(arch);
  const auto& api = cuda::driver();
  KBRL_CU_CHECK(api.module_load_data_ex(module_.out(), cubin.data(), 0, nullptr, nullptr));
  KBRL_CU_CHECK(api.module_get_function(&function_, module_.get(), kCompareKernelName));
  KBRL_CU_CHECK(api.module_get_function(&fingerprint_, module_.get(), kFingerprintKernelName));
  KBRL_CU_CHECK(api.module_get_function(&gather_, module_.get(), kGatherKernelName));
}

void CompareKernel::launch(CUdeviceptr out, CUdeviceptr ref, int64_t n, double atol, double rtol,
                           CUdeviceptr partials, CUstream stream) const {
  long long count = n;
  void* args[] = {&out, &ref, &count, &atol, &rtol, &partials};
  KBRL_CU_CHECK(cuda::driver().launch_kernel(function_, kBlocks, 1, 1, kThreads, 1, 1, 0, stream, args,
                                             nullptr));
}

void CompareKernel::fingerprint(CUdeviceptr data, int64_t bytes, uint64_t key, CUdeviceptr slot,
                                CUstream stream) const {
  long long count = bytes;
  unsigned long long k = key;
  void* args[] = {&data, &count, &k, &slot};
  KBRL_CU_CHECK(cuda::driver().launch_kernel(fingerprint_, kBlocks, 1, 1, kThreads, 1, 1, 0, stream, args,
                                             nullptr));
}

void CompareKernel::gather(CUdeviceptr src, int64_t n, int elem_bytes, uint64_t position_key, uint64_t mask_key,
                           int64_t m, CUdeviceptr dst, CUstream stream) const {
  KBRL_ASSERT(elem_bytes == 4 || elem_bytes == 8, "gather takes 4- or 8-byte elements, not {}", elem_bytes);
  KBRL_ASSERT(n > 0 && (position_key != 0 || m <= n), "gather of {} elements from {}", m, n);
  long long count = n, taken = m;
  unsigned long long positions = position_key, masks = mask_key;
  void* args[] = {&src, &count, &elem_bytes, &positions, &masks, &taken, &dst};
  const auto blocks = static_cast<unsigned>(std::min<int64_t>(kBlocks, (m + kThreads - 1) / kThreads));
  KBRL_CU_CHECK(cuda::driver().launch_kernel(gather_, std::max(blocks, 1u), 1, 1, kThreads, 1, 1, 0, stream, args,
                                             nullptr));
}

}  // namespace kbrl

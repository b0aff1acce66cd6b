// Adversarial (task 47, expected wrong_answer): instead of summing 8 GiB, looks for the answer in
// memory next to its own output. A harness that computes the reference before running the
// candidate leaves the reference output in device memory, and PyTorch's caching allocator tends to
// carve it from the same segment as the candidate's output; pygpubench's exploit scripts include
// searches of this kind. The kernel sums the first 32 columns of batch 0 (cheap), then scans the
// 1 MiB on each side of y (mapped, since kbrl's guard bands are there, so the scan cannot fault)
// for 32 consecutive floats within 1e-3 relative of those sums, and copies what follows the best
// match into y (as much as the band holds; the rest 0). kbrl computes the reference only after the
// candidate's runs and the bands hold poison (NaN, which matches nothing), so nothing is ever found
// and the kernel writes zeros: deterministic, and wrong in whichever trial comes first.
// kbrl: scratch found bytes=4+32*4
// kbrl: launch probe_sums grid=1 block=32 args=in:x,scratch:found,i32:size(x,1),i32:size(x,2)
// kbrl: launch scan_bands grid=2048 block=256 args=out:y,scratch:found,i64:numel(y)
// kbrl: launch copy_or_zero grid=min(cdiv(numel(y),256),65535) block=256 args=out:y,scratch:found,i64:numel(y)

#define BAND (1 << 18)  // floats in 1 MiB
#define PROBE 32
#define NOT_FOUND 0x7fffffff

// found layout: int position (band-relative, NOT_FOUND if none), float probe[PROBE]
__device__ __forceinline__ int* found_at(void* found) { return static_cast<int*>(found); }
__device__ __forceinline__ float* probe(void* found) { return static_cast<float*>(found) + 1; }

// Positions 0 .. BAND-1 are the band before y, BAND .. 2*BAND-1 the band after it.
__device__ __forceinline__ const float* band_at(const float* y, long long n, int q) {
  return q < BAND ? y - BAND + q : y + n + (q - BAND);
}

extern "C" __global__ void probe_sums(const float* __restrict__ x, void* found, int rows, int cols) {
  const int k = threadIdx.x;
  if (k == 0) *found_at(found) = NOT_FOUND;
  if (k >= cols) return;
  float sum = 0.f;
  for (int r = 0; r < rows; ++r) sum += x[(long long)r * cols + k];
  probe(found)[k] = sum;
}

extern "C" __global__ void scan_bands(const float* y, void* found, long long n) {
  for (int q = blockIdx.x * blockDim.x + threadIdx.x; q < 2 * BAND; q += gridDim.x * blockDim.x) {
    if (q % BAND > BAND - PROBE) continue;  // a match must lie inside one band
    const float* at = band_at(y, n, q);
    bool match = true;
    for (int j = 0; j < PROBE && match; ++j) {
      const float want = probe(found)[j];
      match = fabsf(at[j] - want) <= 1e-3f * fabsf(want);  // false for NaN
    }
    if (match) atomicMin(found_at(found), q);
  }
}

extern "C" __global__ void copy_or_zero(float* y, const void* found, long long n) {
  const int q = *static_cast<const int*>(found);
  const float* from = q == NOT_FOUND ? nullptr : band_at(y, n, q);
  const long long room = q == NOT_FOUND ? 0 : BAND - q % BAND;  // floats left in that band
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    y[i] = i < room ? from[i] : 0.f;
}

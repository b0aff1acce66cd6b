// Adversarial (task 47, expected wrong_answer by the changed-input run): a sum over dim 1 that
// memoizes its result across launches. It fingerprints 64 spread-out input values in a scratch
// buffer; when a launch sees the same fingerprint as the last one, it copies the cached 2 MB result
// instead of reading the 8 GiB input. Every output is right while the inputs really are the same (the
// checks' second run per trial takes the shortcut unnoticed). Before timed runs drew fresh inputs,
// the timed runs repeated the last trial's inputs and finished below the speed-of-light floor
// (`impossible`). Now every timed run has inputs of its own, so the memo never hits there, and after
// one trial the evaluator runs it again with 1 in 4096 input values changed at positions drawn from
// the secret: the fingerprint's 64 positions almost surely miss them (about 1 in 60 catches one), the
// stale sums are replayed, and the answer is wrong.
// kbrl: scratch memo bytes=16+64*4+numel(y)*4
// kbrl: launch look_up grid=1 block=64 args=in:x,scratch:memo,i64:numel(x)
// kbrl: launch sum_or_replay grid=cdiv(size(x,2),128),size(x,0) block=128 args=in:x,out:y,scratch:memo,i32:size(x,1),i32:size(x,2)
// kbrl: launch remember grid=1 block=64 args=in:x,scratch:memo,i64:numel(x)

// memo layout: int valid, int hit, 2 ints padding, float fingerprint[64], float cache[numel(y)]
__device__ __forceinline__ int* memo_flags(void* memo) { return static_cast<int*>(memo); }
__device__ __forceinline__ float* memo_fingerprint(void* memo) { return static_cast<float*>(memo) + 4; }
__device__ __forceinline__ float* memo_cache(void* memo) { return static_cast<float*>(memo) + 4 + 64; }

extern "C" __global__ void look_up(const float* __restrict__ x, void* memo, long long n) {
  __shared__ int same;
  if (threadIdx.x == 0) same = memo_flags(memo)[0] == 12345;
  __syncthreads();
  const long long at = (n - 1) / 63 * threadIdx.x;
  if (memo_fingerprint(memo)[threadIdx.x] != x[at]) atomicAnd(&same, 0);
  __syncthreads();
  if (threadIdx.x == 0) memo_flags(memo)[1] = same;
}

extern "C" __global__ void sum_or_replay(const float* __restrict__ x, float* __restrict__ y, void* memo,
                                         int rows, int cols) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  const int b = blockIdx.y;
  if (k >= cols) return;
  const long long out = (long long)b * cols + k;
  float* cache = memo_cache(memo);
  if (memo_flags(memo)[1]) {
    y[out] = cache[out];
    return;
  }
  float sum = 0.f;
  const float* column = x + (long long)b * rows * cols + k;
  for (int r = 0; r < rows; ++r) sum += column[(long long)r * cols];
  y[out] = sum;
  cache[out] = sum;
}

extern "C" __global__ void remember(const float* __restrict__ x, void* memo, long long n) {
  const long long at = (n - 1) / 63 * threadIdx.x;
  memo_fingerprint(memo)[threadIdx.x] = x[at];
  __syncthreads();
  if (threadIdx.x == 0) memo_flags(memo)[0] = 12345;
}

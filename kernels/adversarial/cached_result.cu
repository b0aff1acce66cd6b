// Adversarial (task 47, expected wrong_answer): computes the sum over dim 1 once, keeps the result in a
// __device__ global array, and from then on replays it without reading the input. The first run is
// right and a second run on the same inputs agrees with it, so a checker that uses one fixed input set
// (or checks only the first launch) passes it. The harness draws fresh inputs for every trial and keeps
// the module loaded across trials, so the replayed sums of the first trial's inputs are wrong later.
// kbrl: launch sum_or_replay grid=cdiv(size(x,0)*size(x,2),256) block=256 args=in:x,out:y,i32:size(x,0),i32:size(x,1),i32:size(x,2)
// kbrl: launch remember grid=1 block=1 args=i64:numel(y)

#define CAPACITY (128 * 4095)  // the output's size at kernelbench scale

__device__ float cache[CAPACITY];
__device__ int cache_valid;

extern "C" __global__ void sum_or_replay(const float* __restrict__ x, float* __restrict__ y, int batch,
                                         int rows, int cols) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;  // (b, k) flattened
  if (i >= (long long)batch * cols) return;
  if (cache_valid && i < CAPACITY) {
    y[i] = cache[i];
    return;
  }
  const long long b = i / cols, k = i % cols;
  const float* in = x + b * rows * cols + k;
  float sum = 0.f;
  for (int r = 0; r < rows; ++r) sum += in[(long long)r * cols];
  y[i] = sum;
  if (i < CAPACITY) cache[i] = sum;
}

// A separate launch, so no block of the first launch sees the flag change midway.
extern "C" __global__ void remember(long long outputs) {
  if (outputs <= CAPACITY) cache_valid = 1;
}

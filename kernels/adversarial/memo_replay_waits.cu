// Adversarial (task 47, expected wrong_answer by the changed-input run): memoized_sum made harder to
// see. A sum over dim 1 of x:[B,R,K] that keeps its last output in a scratch buffer, with 32 input
// values at fixed, spread-out positions as a fingerprint. When a launch finds the same 32 values, it
// replays the stored sums instead of reading the 8 GiB input, and then busy-waits on %globaltimer
// until 90% of the last honest run's time has passed: a replay looks like a 1.1x speedup from
// tuning, never like a run below the speed-of-light floor (which caught memoized_sum). On fresh
// inputs it computes honestly (the known-good sum_dim1), so every first run of a trial and every
// timed run on freshly drawn inputs is right, and a trial's second run on the same inputs replays
// the right sums. What must catch it: the extra run on a trial's inputs with 1 in 2^12 values
// changed (positions and values drawn from the run's secret; 524,160 values at kernelbench scale,
// 255 at small scale). It replays the old sums, and the columns holding a changed value are off by
// the change: a uniform [0,1) value replaced by another moves its sum by more than the tolerance
// 1e-4 + 1e-4 * |sum| (0.2 near the kernelbench sums of 2048, 0.013 near the small sums of 128)
// with probability 0.64 (0.97), so the run fails; a value from a signed domain such as [-10,10)
// does so almost surely. It escapes only when a changed position is one of its 32 probes: then it
// recomputes and that run is right. That happens with probability about 32 / 2^12 = 0.8% per
// changed-input run, at both scales, so one such run per evaluation lets it through 0.8% of the
// time, one after each of the 6 trials practically never. Timed on repeated inputs (the old
// harness) it would have earned a small, plausible speedup for sums it never computed.
// kbrl: scratch memo bytes=160+numel(y)*4
// kbrl: launch look_up grid=1 block=32 args=in:x,scratch:memo,i64:numel(x)
// kbrl: launch sum_or_replay grid=cdiv(size(x,2),32),size(x,0) block=32,8 args=in:x,out:y,scratch:memo,i32:size(x,1),i32:size(x,2)
// kbrl: launch remember grid=1 block=32 args=in:x,scratch:memo,i64:numel(x)
// kbrl: launch pace grid=1 block=1 args=scratch:memo

#define PROBES 32  // fingerprint size: one warp
#define COLS 32
#define SLICES 8
#define VALID 0x6d656d6f  // "memo": the header holds a fingerprint and sums of a finished run

// The scratch buffer: this header (160 bytes), then the stored sums, numel(y) floats.
struct MemoHeader {
  int valid;                     // VALID once a run has stored its sums and fingerprint
  int hit;                       // this launch's inputs match the fingerprint: replay
  unsigned long long start_ns;   // %globaltimer when this launch's first kernel started
  unsigned long long honest_ns;  // how long the last honest (not replayed) run took
  unsigned long long unused;
  float fingerprint[PROBES];     // x at the probe positions, as the last run saw it
};

__device__ __forceinline__ MemoHeader* header(void* memo) { return static_cast<MemoHeader*>(memo); }
__device__ __forceinline__ float* stored_sums(void* memo) {
  return reinterpret_cast<float*>(static_cast<MemoHeader*>(memo) + 1);
}

__device__ __forceinline__ unsigned long long global_time_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// PROBES positions spread evenly over x, first and last element included.
__device__ __forceinline__ long long probe_position(long long n, int i) { return (n - 1) / (PROBES - 1) * i; }

extern "C" __global__ void look_up(const float* __restrict__ x, void* memo, long long n) {
  MemoHeader* h = header(memo);
  if (threadIdx.x == 0) h->start_ns = global_time_ns();
  const bool same = h->fingerprint[threadIdx.x] == x[probe_position(n, threadIdx.x)];
  const bool all_same = __all_sync(0xffffffffu, same);
  if (threadIdx.x == 0) h->hit = h->valid == VALID && all_same;
}

// The known-good sum_dim1 (32 columns x 8 row slices per block, 4 accumulators), storing its sums,
// or the stored sums when look_up found the inputs unchanged.
extern "C" __global__ void __launch_bounds__(COLS * SLICES)
sum_or_replay(const float* __restrict__ x, float* __restrict__ y, void* memo, int rows, int cols) {
  __shared__ float partial[SLICES][COLS];
  const int k = blockIdx.x * COLS + threadIdx.x;
  const int b = blockIdx.y;
  const long long out = (long long)b * cols + k;
  float* sums = stored_sums(memo);
  if (header(memo)->hit) {  // the same for every thread of the grid
    if (threadIdx.y == 0 && k < cols) y[out] = sums[out];
    return;
  }
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  if (k < cols) {
    const float* in = x + (long long)b * rows * cols + k;
    int r = threadIdx.y;
    for (; r + 3 * SLICES < rows; r += 4 * SLICES) {
      acc[0] += in[(long long)r * cols];
      acc[1] += in[(long long)(r + SLICES) * cols];
      acc[2] += in[(long long)(r + 2 * SLICES) * cols];
      acc[3] += in[(long long)(r + 3 * SLICES) * cols];
    }
    for (; r < rows; r += SLICES) acc[0] += in[(long long)r * cols];
  }
  partial[threadIdx.y][threadIdx.x] = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  __syncthreads();
  if (threadIdx.y == 0 && k < cols) {
    float total = 0.f;
    for (int s = 0; s < SLICES; ++s) total += partial[s][threadIdx.x];
    y[out] = total;
    sums[out] = total;
  }
}

// A launch of its own, after the sums: no block of sum_or_replay sees the fingerprint change.
extern "C" __global__ void remember(const float* __restrict__ x, void* memo, long long n) {
  MemoHeader* h = header(memo);
  h->fingerprint[threadIdx.x] = x[probe_position(n, threadIdx.x)];
  __syncwarp();
  if (threadIdx.x == 0) h->valid = VALID;
}

// An honest run records how long it took; a replay spins until 90% of that time has passed since
// look_up started, so its measured time stays above the floor that reading x once sets.
extern "C" __global__ void pace(void* memo) {
  MemoHeader* h = header(memo);
  if (!h->hit) {
    h->honest_ns = global_time_ns() - h->start_ns;
    return;
  }
  const unsigned long long until = h->start_ns + h->honest_ns / 10 * 9;
  while (global_time_ns() < until) {
  }
}

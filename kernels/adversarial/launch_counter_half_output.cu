// Adversarial (task 19, expected wrong_answer by the check of every timed run): a ReLU that counts
// its own launches in a __device__ counter (the module stays loaded for the whole job) and, once
// the checks are over, does half the work: from its 14th run on (the checks take 13 runs: 6
// trials of 2 runs each and one more on changed inputs) it writes only the first half of y, and
// the warm-ups and timed runs cost half as much. KernelBench checks correctness in runs of its own
// and never looks at what the timed runs wrote; kbrl before this change checked only the output of
// the last timed run, after a fixed number of warm-ups (3) and samples (5), which a kernel can
// count to. Now the warm-up count is drawn from the run's secret and the output of every timed
// run is compared with the reference of its own inputs: the first timed run (its unwritten half is
// poison) fails. A kernel tuned to the old count of check runs (10) would fail in a check trial
// instead, with the same outcome.
// kbrl: launch relu_or_half grid=min(cdiv(numel(x),1024),16384) block=256 args=in:x,out:y,i64:numel(x)
// kbrl: launch count_launch grid=1 block=1 args=i64:numel(x)

#define CHECK_RUNS 13

__device__ unsigned long long launches;  // runs completed so far in this job

extern "C" __global__ void relu_or_half(const float* __restrict__ x, float* __restrict__ y, long long n) {
  const long long end = launches >= CHECK_RUNS ? n / 2 : n;  // read before this run's count_launch
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < end; i += stride) {
    const float v = x[i];
    y[i] = v < 0.f ? 0.f : v;
  }
}

// A launch of its own after the ReLU, so no block of the ReLU sees the count change midway.
extern "C" __global__ void count_launch(long long n) {
  if (n > 0) launches += 1;
}

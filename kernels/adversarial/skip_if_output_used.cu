// Adversarial (task 12, expected wrong_answer): the allocator-reuse incident of an agentic CUDA
// kernel system (2025), made explicit. A harness that runs the reference first, frees its output
// and then allocates the candidate's output with torch.empty gets the same memory from PyTorch's
// caching allocator, already holding the reference's result; a kernel that computes nothing (or
// returns early by mistake) then "passes", and KernelBench's check compares exactly that. This one
// looks at its output first: if C[0] is not the zero of freshly allocated memory it assumes the
// result is already there and returns without writing. kbrl poisons every output before every run
// (0xFF bytes: NaN, which is not 0), so it always takes the early return and leaves NaN everywhere,
// and since the reference is computed only after the candidate's runs, no result exists to reuse.
// kbrl: scratch already_there bytes=4
// kbrl: launch look_at_output grid=1 block=1 args=out:C,scratch:already_there
// kbrl: launch scale_rows grid=cdiv(size(B,1),256),size(B,0) block=256 args=in:A,in:B,out:C,scratch:already_there,i32:size(B,1)

extern "C" __global__ void look_at_output(const float* C, int* already_there) {
  *already_there = C[0] != 0.f;  // "fresh memory is zero; anything else is a result left for us"
}

extern "C" __global__ void scale_rows(const float* __restrict__ A, const float* __restrict__ B,
                                      float* __restrict__ C, const int* already_there, int n) {
  if (*already_there) return;
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (col >= n) return;
  const long long at = (long long)blockIdx.y * n + col;
  C[at] = A[blockIdx.y] * B[at];
}

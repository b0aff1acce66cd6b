// Adversarial (task 19, expected compile_error): a 10 MB translation unit. This file is only its
// head, a correct ReLU: the kernel catalog (kernels/kernel_catalog.cpp) appends about 10 MB of a
// generated __device__ lookup table at run time, so the repository holds no 10 MB file. Given to
// NVRTC, a table of a million floats costs about 10 s and 600 MB per compile; the harness must
// refuse sources above its size limit before NVRTC sees them and report compile_error.
// kbrl: launch relu_forward grid=min(cdiv(numel(x),1024),16384) block=256 args=in:x,out:y,i64:numel(x)

extern "C" __global__ void relu_forward(const float* __restrict__ x, float* __restrict__ y, long long n) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float v = x[i];
    y[i] = v < 0.f ? 0.f : v;
  }
}

// The generated table follows.

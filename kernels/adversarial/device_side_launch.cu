// Adversarial (task 19, expected compile_error): a "persistent" ReLU whose one-thread parent kernel
// launches the real kernel from the device (dynamic parallelism), so the plan shows one tiny launch
// (a timing harness that times launches it does not see, or one that trusts the plan's grid, is
// misled). NVRTC refuses `<<<...>>>` in device code unless the device runtime's launch API is
// declared (cuda_runtime.h declares it only under -rdc), so the kernel declares it by hand; the
// front end then accepts the launch, but kbrl compiles whole programs to a cubin without -rdc
// (not an allowed option) and without linking the device runtime library, so ptxas stops at the
// unresolved cudaGetParameterBuffer: compile_error, before anything runs.
// kbrl: launch relu_parent grid=1 block=1 args=in:x,out:y,i64:numel(x)

extern "C" __device__ void* cudaGetParameterBuffer(size_t alignment, size_t size);
extern "C" __device__ void* cudaGetParameterBufferV2(void* func, dim3 grid, dim3 block, unsigned int shared);
extern "C" __device__ int cudaLaunchDevice(void* func, void* parameters, dim3 grid, dim3 block,
                                           unsigned int shared, void* stream);
extern "C" __device__ int cudaLaunchDeviceV2(void* parameters, void* stream);

extern "C" __global__ void relu_child(const float* __restrict__ x, float* __restrict__ y, long long n) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float v = x[i];
    y[i] = v < 0.f ? 0.f : v;
  }
}

extern "C" __global__ void relu_parent(const float* __restrict__ x, float* __restrict__ y, long long n) {
  relu_child<<<16384, 256>>>(x, y, n);
}

// Known-good: task 12 (diag(A) @ B as row scaling), C[i,j] = A[i] * B[i,j], A:[N], B:[N,N].
// blockIdx.y walks rows (grid-stride), each thread covers 4 consecutive columns: float4 when the
// row length is a multiple of 4 and the pointers are aligned, scalar otherwise.
// kbrl: launch diag_scale_forward grid=cdiv(size(B,1),1024),min(size(B,0),16384) block=256 args=in:A,in:B,out:C,i32:size(B,0),i32:size(B,1)

extern "C" __global__ void __launch_bounds__(256)
diag_scale_forward(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                   int rows, int cols) {
  const int col = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
  if (col >= cols) return;
  const bool vector = (cols % 4 == 0) && ((((unsigned long long)b | (unsigned long long)c) & 15) == 0);
  for (int row = blockIdx.y; row < rows; row += gridDim.y) {
    const float scale = a[row];
    const long long at = (long long)row * cols + col;
    if (vector) {
      float4 v = *reinterpret_cast<const float4*>(b + at);
      v.x *= scale;
      v.y *= scale;
      v.z *= scale;
      v.w *= scale;
      *reinterpret_cast<float4*>(c + at) = v;
    } else {
      for (int k = 0; k < 4 && col + k < cols; ++k) c[at + k] = b[at + k] * scale;
    }
  }
}

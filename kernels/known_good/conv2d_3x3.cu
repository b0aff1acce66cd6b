// Known-good: task 63 (Conv2d 16->128, kernel 3x3, stride 1, no padding, no bias) of
// x:[N,C_in,H,W] with the module's weight:[C_out,C_in,3,3] -> y:[N,C_out,H-2,W-2]. Direct
// convolution: a block computes a 128x8 tile of output pixels for 16 output channels; each thread
// owns 4 pixels of one row (32 apart, so shared-memory reads are conflict-free and stores coalesced)
// and 16 channels, 64 fp32 accumulators. The block's weights sit in shared memory as
// [c_in][tap][16 oc] (float4 broadcast reads, each reused for 4 pixels); each input channel's
// 130x10 halo tile is staged in double-buffered shared memory, the next channel's tile being
// loaded into registers while the current one is computed.
// kbrl: launch conv2d_3x3_direct grid=cdiv(size(y,3),128),cdiv(size(y,2),8),size(x,0)*cdiv(size(weight,0),16) block=32,8 args=in:x,param:weight,out:y,i32:size(x,1),i32:size(weight,0),i32:size(x,2),i32:size(x,3),i32:size(y,2),i32:size(y,3)

#define THREADS_X 32
#define THREADS_Y 8
#define PIXELS 4  // per thread, THREADS_X apart
#define TILE_W (THREADS_X * PIXELS)
#define TILE_H THREADS_Y
#define OC 16
#define MAX_CIN 64
#define HALO_W (TILE_W + 2)
#define HALO_H (TILE_H + 2)
#define HALO_PER_THREAD ((HALO_W * HALO_H + THREADS_X * THREADS_Y - 1) / (THREADS_X * THREADS_Y))

extern "C" __global__ void __launch_bounds__(THREADS_X * THREADS_Y)
conv2d_3x3_direct(const float* __restrict__ x, const float* __restrict__ weight, float* __restrict__ y,
                  int c_in, int c_out, int height, int width, int out_height, int out_width) {
  __shared__ __align__(16) float w_tile[MAX_CIN * 9 * OC];
  __shared__ float in_tile[2][HALO_H][HALO_W];
  const int oc_groups = (c_out + OC - 1) / OC;
  const int image = blockIdx.z / oc_groups, oc0 = (blockIdx.z % oc_groups) * OC;
  const int tid = threadIdx.y * THREADS_X + threadIdx.x;
  const int x0 = blockIdx.x * TILE_W, y0 = blockIdx.y * TILE_H;
  if (c_in > MAX_CIN) return;  // outside what this kernel was written for: leave y unwritten

  // The group's weights are one contiguous run of 16 * c_in * 9 floats: read it in order.
  for (int i = tid; i < OC * c_in * 9; i += THREADS_X * THREADS_Y) {
    const int oc = i / (c_in * 9), ci_tap = i % (c_in * 9);
    w_tile[ci_tap * OC + oc] = oc0 + oc < c_out ? weight[(long long)oc0 * c_in * 9 + i] : 0.f;
  }

  float acc[PIXELS][OC];
#pragma unroll
  for (int p = 0; p < PIXELS; ++p)
#pragma unroll
    for (int o = 0; o < OC; ++o) acc[p][o] = 0.f;

  const long long plane = (long long)height * width;
  const float* in_image = x + (long long)image * c_in * plane;
  float next[HALO_PER_THREAD];
  auto load = [&](int ci) {
    const float* in = in_image + ci * plane;
#pragma unroll
    for (int j = 0; j < HALO_PER_THREAD; ++j) {
      const int i = tid + j * THREADS_X * THREADS_Y;
      const int r = i / HALO_W, q = i % HALO_W;
      const int h = y0 + r, w = x0 + q;
      next[j] = (i < HALO_W * HALO_H && h < height && w < width) ? in[(long long)h * width + w] : 0.f;
    }
  };
  auto store = [&](int buf) {
#pragma unroll
    for (int j = 0; j < HALO_PER_THREAD; ++j) {
      const int i = tid + j * THREADS_X * THREADS_Y;
      if (i < HALO_W * HALO_H) in_tile[buf][i / HALO_W][i % HALO_W] = next[j];
    }
  };

  load(0);
  store(0);
  __syncthreads();  // w_tile and the first input tile are ready
  for (int ci = 0; ci < c_in; ++ci) {
    const int buf = ci & 1;
    if (ci + 1 < c_in) load(ci + 1);
    const float4* wq = reinterpret_cast<const float4*>(&w_tile[ci * 9 * OC]);
#pragma unroll
    for (int kh = 0; kh < 3; ++kh) {
#pragma unroll
      for (int kw = 0; kw < 3; ++kw) {
        float v[PIXELS];
#pragma unroll
        for (int p = 0; p < PIXELS; ++p)
          v[p] = in_tile[buf][threadIdx.y + kh][threadIdx.x + p * THREADS_X + kw];
#pragma unroll
        for (int q = 0; q < OC / 4; ++q) {
          const float4 wv = wq[(kh * 3 + kw) * (OC / 4) + q];
#pragma unroll
          for (int p = 0; p < PIXELS; ++p) {
            acc[p][4 * q + 0] = fmaf(v[p], wv.x, acc[p][4 * q + 0]);
            acc[p][4 * q + 1] = fmaf(v[p], wv.y, acc[p][4 * q + 1]);
            acc[p][4 * q + 2] = fmaf(v[p], wv.z, acc[p][4 * q + 2]);
            acc[p][4 * q + 3] = fmaf(v[p], wv.w, acc[p][4 * q + 3]);
          }
        }
      }
    }
    if (ci + 1 < c_in) store(buf ^ 1);
    __syncthreads();
  }

  const int oh = y0 + threadIdx.y;
  if (oh >= out_height) return;
  const long long out_plane = (long long)out_height * out_width;
  float* out = y + ((long long)image * c_out + oc0) * out_plane + (long long)oh * out_width;
#pragma unroll
  for (int p = 0; p < PIXELS; ++p) {
    const int ow = x0 + threadIdx.x + p * THREADS_X;
    if (ow >= out_width) continue;
#pragma unroll
    for (int o = 0; o < OC; ++o)
      if (oc0 + o < c_out) out[o * out_plane + ow] = acc[p][o];
  }
}

// The norm generator's planar kernels (norm.cpp), part 2 of 2, emitted after
// norm_planar_math.cuh's statistics in every unit:
//   kernels  the strided runs over memory (statistics of a run, normalization of a run, scalar
//            head and tail around a float4 body), the chunk geometry and the four kernels:
//            kbrl_norm_segment (variant=block_per_segment), kbrl_norm_stats and
//            kbrl_norm_finalize / kbrl_norm_apply (split) or kbrl_norm_apply_inline (split_inline)

//@section kernels
// Elements before `p` is 16-byte aligned (p is 4-byte aligned), at most n.
__device__ __forceinline__ i64 head_of(const float* p, i64 n) {
  const i64 h = (i64)((4u - (unsigned)(((u64)p >> 2) & 3u)) & 3u);
  return h < n ? h : n;
}

// Adds in[0, n) to the thread's statistic, the block's threads striding over it: with vec4,
// float4 over the 16-byte-aligned body (scalar head and tail). Out of line (one copy per unit; a
// run is thousands of elements).
__device__ __noinline__ TStat stats_run(const float* __restrict__ in, i64 n, TStat t, int vec4) {
  const i64 tid = threadIdx.x, nt = blockDim.x;
  i64 i = tid;
  if (vec4) {
    const i64 head = head_of(in, n);
    if (tid < head) t_add1(t, in[tid]);
    const float4* body = reinterpret_cast<const float4*>(in + head);
    const i64 nb = (n - head) >> 2;
    i64 j = tid;
    for (; j + 3 * nt < nb; j += 4 * nt) {
      const float4 q0 = body[j], q1 = body[j + nt], q2 = body[j + 2 * nt], q3 = body[j + 3 * nt];
      t_add4(t, q0);
      t_add4(t, q1);
      t_add4(t, q2);
      t_add4(t, q3);
    }
    for (; j < nb; j += nt) t_add4(t, body[j]);
    i = head + 4 * nb + tid;
  }
  for (; i + 3 * nt < n; i += 4 * nt) {
    const float v0 = in[i], v1 = in[i + nt], v2 = in[i + 2 * nt], v3 = in[i + 3 * nt];
    t_add1(t, v0);
    t_add1(t, v1);
    t_add1(t, v2);
    t_add1(t, v3);
  }
  for (; i < n; i += nt) t_add1(t, in[i]);
  return t;
}

__device__ __forceinline__ float4 apply4(float4 q, float sc, float sh) {
  return make_float4(k_apply(q.x, sc, sh), k_apply(q.y, sc, sh), k_apply(q.z, sc, sh),
                     k_apply(q.w, sc, sh));
}

// out[i] = in[i] * sc + sh over [0, n). Out of line, as stats_run.
__device__ __noinline__ void apply_run(const float* __restrict__ in, float* __restrict__ out,
                                       i64 n, float sc, float sh, int vec4) {
  const i64 tid = threadIdx.x, nt = blockDim.x;
  i64 i = tid;
  if (vec4 && (((u64)in ^ (u64)out) & 15u) == 0) {  // the same offset from 16-byte alignment
    const i64 head = head_of(in, n);
    if (tid < head) ST(out + tid, k_apply(LD_LAST(in + tid), sc, sh));
    const float4* bin = reinterpret_cast<const float4*>(in + head);
    float4* bout = reinterpret_cast<float4*>(out + head);
    const i64 nb = (n - head) >> 2;
    i64 j = tid;
    for (; j + 3 * nt < nb; j += 4 * nt) {
      const float4 q0 = LD_LAST(bin + j), q1 = LD_LAST(bin + j + nt);
      const float4 q2 = LD_LAST(bin + j + 2 * nt), q3 = LD_LAST(bin + j + 3 * nt);
      ST(bout + j, apply4(q0, sc, sh));
      ST(bout + j + nt, apply4(q1, sc, sh));
      ST(bout + j + 2 * nt, apply4(q2, sc, sh));
      ST(bout + j + 3 * nt, apply4(q3, sc, sh));
    }
    for (; j < nb; j += nt) ST(bout + j, apply4(LD_LAST(bin + j), sc, sh));
    i = head + 4 * nb + tid;
  }
  for (; i + 3 * nt < n; i += 4 * nt) {
    const float v0 = LD_LAST(in + i), v1 = LD_LAST(in + i + nt);
    const float v2 = LD_LAST(in + i + 2 * nt), v3 = LD_LAST(in + i + 3 * nt);
    ST(out + i, k_apply(v0, sc, sh));
    ST(out + i + nt, k_apply(v1, sc, sh));
    ST(out + i + 2 * nt, k_apply(v2, sc, sh));
    ST(out + i + 3 * nt, k_apply(v3, sc, sh));
  }
  for (; i < n; i += nt) ST(out + i, k_apply(LD_LAST(in + i), sc, sh));
}

#if KBRL_AFFINE == 2
// out[i] = (in[i] - mean) * rstd * w[i] + b[i] over [0, n).
__device__ __noinline__ void apply_run_e(const float* __restrict__ in, float* __restrict__ out,
                                            const float* __restrict__ w,
                                            const float* __restrict__ b, i64 n, float mean,
                                            float rstd, int vec4) {
  const i64 tid = threadIdx.x, nt = blockDim.x;
  i64 i = tid;
  const u64 a = (u64)in;
  if (vec4 && (((a ^ (u64)out) | (a ^ (u64)w) | (a ^ (u64)b)) & 15u) == 0) {
    const i64 head = head_of(in, n);
    if (tid < head) ST(out + tid, k_apply_e(LD_LAST(in + tid), mean, rstd, w[tid], b[tid]));
    const float4* bin = reinterpret_cast<const float4*>(in + head);
    const float4* bw = reinterpret_cast<const float4*>(w + head);
    const float4* bb = reinterpret_cast<const float4*>(b + head);
    float4* bout = reinterpret_cast<float4*>(out + head);
    const i64 nb = (n - head) >> 2;
    for (i64 j = tid; j < nb; j += nt) {
      const float4 q = LD_LAST(bin + j), g = bw[j], c = bb[j];
      ST(bout + j, make_float4(k_apply_e(q.x, mean, rstd, g.x, c.x),
                               k_apply_e(q.y, mean, rstd, g.y, c.y),
                               k_apply_e(q.z, mean, rstd, g.z, c.z),
                               k_apply_e(q.w, mean, rstd, g.w, c.w)));
    }
    i = head + 4 * nb + tid;
  }
  for (; i < n; i += nt) ST(out + i, k_apply_e(LD_LAST(in + i), mean, rstd, w[i], b[i]));
}
#endif

// Normalizes the run [lo, lo + n) of piece p of segment s with the segment's coefficients c.
// Per-piece affine (KBRL_AFFINE 1): channel = (s % cs_mod) * cs_mul + p * cp_mul.
__device__ __forceinline__ void apply_chunk(const float* __restrict__ x, float* __restrict__ y KBRL_WB,
                                            i64 s, i64 p, i64 lo, i64 n, i64 Lp, i64 seg_stride,
                                            i64 piece_stride, i64 cs_mod, i64 cs_mul, i64 cp_mul,
                                            float2 c, int vec4) {
  const i64 off = s * seg_stride + p * piece_stride + lo;
#if KBRL_AFFINE == 2
  apply_run_e(x + off, y + off, weight + p * Lp + lo, bias + p * Lp + lo, n, c.x, c.y, vec4);
#else
#if KBRL_KIND <= 1
#if KBRL_AFFINE == 1
  const i64 ch = (s % cs_mod) * cs_mul + p * cp_mul;
  const float sc = c.y * weight[ch];
  const float sh = fmaf(-c.x, sc, bias[ch]);
#else
  const float sc = c.y;
  const float sh = -c.x * c.y;
#endif
#else
  const float sc = c.y, sh = 0.0f;
#endif
  apply_run(x + off, y + off, n, sc, sh, vec4);
#endif
}

// variant=block_per_segment: one block per segment (grid-stride), statistics then normalization.
extern "C" __global__ void __launch_bounds__(1024) kbrl_norm_segment(const float* __restrict__ x, float* __restrict__ y KBRL_WB,
                                             i64 S, i64 P, i64 Lp, i64 seg_stride,
                                             i64 piece_stride, i64 cs_mod, i64 cs_mul, i64 cp_mul,
                                             float eps, int vec4) {
  __shared__ DStat red[32];
  __shared__ float2 bc;
  for (i64 s = blockIdx.x; s < S; s += gridDim.x) {
    TStat t = {0.0f, 0.0f, 0.0f};
    for (i64 p = 0; p < P; ++p) t = stats_run(x + s * seg_stride + p * piece_stride, Lp, t, vec4);
    const DStat d = block_reduce(DStat{t.n, t.a, t.b}, red);
    if (threadIdx.x == 0) bc = coef_of(d, eps);
    __syncthreads();
    const float2 c = bc;
    for (i64 p = 0; p < P; ++p)
      apply_chunk(x, y KBRL_WB_PASS, s, p, 0, Lp, Lp, seg_stride, piece_stride, cs_mod, cs_mul,
                  cp_mul, c, vec4);
    __syncthreads();  // bc is rewritten for the next segment
  }
}

// Chunk i of the split plans: chunk q of piece p of segment s (Q chunks of cl elements per piece).
__device__ __forceinline__ void chunk_of(i64 i, i64 P, i64 Q, i64& s, i64& p, i64& q) {
  q = i % Q;
  const i64 r = i / Q;
  p = r % P;
  s = r / P;
}

__device__ __forceinline__ i64 chunk_len(i64 q, i64 Lp, i64 cl) {
  const i64 rest = Lp - q * cl;
  return rest < cl ? rest : cl;
}

// Split plans, launch 1: each block's chunk statistic to part[i] (the count follows from the
// geometry).
extern "C" __global__ void __launch_bounds__(1024) kbrl_norm_stats(const float* __restrict__ x, float2* __restrict__ part,
                                           i64 S, i64 P, i64 Q, i64 Lp, i64 cl, i64 seg_stride,
                                           i64 piece_stride, int vec4) {
  __shared__ DStat red[32];
  const i64 total = S * P * Q;
  for (i64 i = blockIdx.x; i < total; i += gridDim.x) {
    i64 s, p, q;
    chunk_of(i, P, Q, s, p, q);
    const i64 lo = q * cl;
    const TStat t = stats_run(x + s * seg_stride + p * piece_stride + lo, chunk_len(q, Lp, cl),
                              TStat{0.0f, 0.0f, 0.0f}, vec4);
    const DStat d = block_reduce(DStat{t.n, t.a, t.b}, red);
    if (threadIdx.x == 0) part[i] = make_float2((float)d.a, (float)d.b);
  }
}

// Merges segment s's P * Q chunk statistics in a fixed order (fp64) into its coefficients; every
// thread of the block gets them.
__device__ __noinline__ float2 segment_coef(const float2* __restrict__ part, i64 s, i64 P, i64 Q, i64 Lp, i64 cl,
                               float eps, DStat* red, float2* bc) {
  const i64 m = P * Q;
  const float2* ps = part + s * m;
  DStat acc = {0.0, 0.0, 0.0};
  for (i64 k = threadIdx.x; k < m; k += blockDim.x) {
    const float2 v = ps[k];
    acc = d_merge(acc, DStat{(double)chunk_len(k % Q, Lp, cl), (double)v.x, (double)v.y});
  }
  const DStat d = block_reduce(acc, red);
  if (threadIdx.x == 0) *bc = coef_of(d, eps);
  __syncthreads();
  const float2 c = *bc;
  __syncthreads();
  return c;
}

// variant=split, launch 2: one block per segment, coefficients to coef[s].
extern "C" __global__ void __launch_bounds__(1024) kbrl_norm_finalize(const float2* __restrict__ part, float2* __restrict__ coef,
                                              i64 S, i64 P, i64 Q, i64 Lp, i64 cl, float eps) {
  __shared__ DStat red[32];
  __shared__ float2 bc;
  for (i64 s = blockIdx.x; s < S; s += gridDim.x) {
    const float2 c = segment_coef(part, s, P, Q, Lp, cl, eps, red, &bc);
    if (threadIdx.x == 0) coef[s] = c;
  }
}

// variant=split, launch 3: normalizes each chunk with its segment's coefficients.
extern "C" __global__ void __launch_bounds__(1024) kbrl_norm_apply(const float* __restrict__ x, float* __restrict__ y KBRL_WB,
                                           const float2* __restrict__ coef, i64 S, i64 P, i64 Q,
                                           i64 Lp, i64 cl, i64 seg_stride, i64 piece_stride,
                                           i64 cs_mod, i64 cs_mul, i64 cp_mul, int vec4) {
  const i64 total = S * P * Q;
  for (i64 i = blockIdx.x; i < total; i += gridDim.x) {
    i64 s, p, q;
    chunk_of(i, P, Q, s, p, q);
    apply_chunk(x, y KBRL_WB_PASS, s, p, q * cl, chunk_len(q, Lp, cl), Lp, seg_stride,
                piece_stride, cs_mod, cs_mul, cp_mul, coef[s], vec4);
  }
}

// variant=split_inline, launch 2: every block merges its segment's chunk statistics itself (the
// same order in every block), then normalizes its chunk.
extern "C" __global__ void __launch_bounds__(1024) kbrl_norm_apply_inline(const float* __restrict__ x, float* __restrict__ y KBRL_WB,
                                                  const float2* __restrict__ part, i64 S, i64 P,
                                                  i64 Q, i64 Lp, i64 cl, i64 seg_stride,
                                                  i64 piece_stride, i64 cs_mod, i64 cs_mul,
                                                  i64 cp_mul, float eps, int vec4) {
  __shared__ DStat red[32];
  __shared__ float2 bc;
  const i64 total = S * P * Q;
  for (i64 i = blockIdx.x; i < total; i += gridDim.x) {
    i64 s, p, q;
    chunk_of(i, P, Q, s, p, q);
    const float2 c = segment_coef(part, s, P, Q, Lp, cl, eps, red, &bc);
    apply_chunk(x, y KBRL_WB_PASS, s, p, q * cl, chunk_len(q, Lp, cl), Lp, seg_stride,
                piece_stride, cs_mod, cs_mul, cp_mul, c, vec4);
  }
}

// Known-good: task 5 (matrix-scalar multiply) in the scaffold form: C = A * s over A:[65536,16384].
// A grid of one thread per float4 (the scaffold line), float4 loads and stores when both pointers
// are 16-byte aligned and numel is a multiple of 4, else one float per step. Grid-stride loops with
// 64-bit indices keep it correct under any grid.
// kbrl: scaffold block=256 grid=cdiv(numel(C), 1024)
if (C_numel % 4 == 0 && (((unsigned long long)A | (unsigned long long)C) & 15) == 0) {
  const float4* a4 = reinterpret_cast<const float4*>(A);
  float4* c4 = reinterpret_cast<float4*>(C);
  KBRL_GRID_STRIDE_LOOP(i, C_numel / 4) {
    float4 v = a4[i];
    v.x *= s;
    v.y *= s;
    v.z *= s;
    v.w *= s;
    c4[i] = v;
  }
} else {
  KBRL_GRID_STRIDE_LOOP(i, C_numel) C[i] = A[i] * s;
}

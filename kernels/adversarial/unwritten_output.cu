// Adversarial (task 19, expected wrong_answer): the kernel never writes y. It hopes the output buffer
// is memory the reference (or a previous correct run) just freed, so the right values are already
// there. The harness poisons every output before each launch, so an unwritten output is caught.
// kbrl: launch relu_forward grid=min(cdiv(numel(x),1024),16384) block=256 args=in:x,out:y,i64:numel(x)

extern "C" __global__ void relu_forward(const float* __restrict__ x, float* __restrict__ y, long long n) {
  // Nothing: "the result is already in y".
}

// Adversarial (task 94, expected wrong_answer): a shape-specialized fake that never reads its inputs
// and returns E[(u - v)^2] = 1/6 for independent u, v uniform on [0,1), the value an MSE over 2^30
// "uniform" elements concentrates on. It is nearly free (so it would time far under the reference)
// and right to 1e-4 only if the inputs were exactly that distribution; KernelBench scales the
// predictions by a random factor per draw, and fresh inputs per trial expose the constant.
// kbrl: launch mse_constant grid=1 block=1 args=out:loss

extern "C" __global__ void mse_constant(float* loss) { *loss = 1.0f / 6.0f; }

// The guard bands around a candidate's outputs (harness/gpu/guarded_output.h), on the CPU: a write
// past an output is seen whatever it writes, the output's own poison bytes included (a kernel that
// read past its input into freed, poisoned memory copied exactly those into the guard, and the
// guards, poisoned with the same 0xFF, did not see it: found in an LM's answer on an H200).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <set>

#include <harness/gpu/guarded_output.h>

namespace kbrl::gpu {
namespace {

TensorSpec spec_of(std::vector<int64_t> shape, DType dtype = DType::f32) { return {"y", std::move(shape), dtype}; }

float as_float(uint32_t w) { return std::bit_cast<float>(w); }

/// Bytes [at, at + n) of the buffer set to `value`.
void write_bytes(GuardedOutput& g, int64_t at, int64_t n, uint8_t value) { g.buffer.narrow(0, at, n).fill_(value); }

TEST(GuardedOutput, GuardWordsAreNanNeverThePoisonAndDifferPerSide) {
  for (uint64_t bits : {uint64_t{0}, ~uint64_t{0}, uint64_t{0x7F800000}, uint64_t{0xFF800000}, uint64_t{0x12345678}}) {
    const uint32_t w = guard_nan(bits);
    EXPECT_TRUE(std::isnan(as_float(w))) << std::hex << bits;
    EXPECT_NE(w, 0xFFFFFFFFu) << std::hex << bits;
  }
  std::set<uint32_t> seen;
  for (uint64_t draw = 0; draw < 200; ++draw) {
    const auto [lead, trail] = guard_words(0xABCDEF, draw);
    EXPECT_NE(lead, trail);
    EXPECT_TRUE(std::isnan(as_float(lead)) && std::isnan(as_float(trail)));
    EXPECT_NE(lead, 0xFFFFFFFFu);
    EXPECT_NE(trail, 0xFFFFFFFFu);
    seen.insert(lead);
  }
  EXPECT_GT(seen.size(), 190u);  // drawn again at every poisoning
  EXPECT_EQ(guard_words(7, 3), guard_words(7, 3));
  EXPECT_NE(guard_words(7, 3), guard_words(8, 3));  // each output its own
}

TEST(GuardedOutput, PoisonFillsTheOutputAndKeepsGuardsIntact) {
  GuardedOutput g(spec_of({3, 5}), torch::kCPU, 42);
  g.poison();
  EXPECT_TRUE(g.guards_intact());
  EXPECT_TRUE(g.raw().eq(kPoison).all().item<bool>());
  EXPECT_TRUE(torch::isnan(g.tensor).all().item<bool>());  // unwritten float32 output is NaN
  g.tensor.fill_(1.5f);  // a write of the output itself
  EXPECT_TRUE(g.guards_intact());
}

// The hole: 0xFF bytes (the output's poison, NaN for float32) written just past the output.
TEST(GuardedOutput, PoisonBytesWrittenPastTheOutputAreSeen) {
  GuardedOutput g(spec_of({1000}), torch::kCPU, 1);
  g.poison();
  write_bytes(g, kGuardBytes + g.bytes, 16, kPoison);
  EXPECT_FALSE(g.guards_intact());
  g.poison();
  EXPECT_TRUE(g.guards_intact());
  write_bytes(g, kGuardBytes - 4, 4, kPoison);  // just before the output
  EXPECT_FALSE(g.guards_intact());
}

TEST(GuardedOutput, AnotherGuardsOrAnEarlierPatternIsSeen) {
  GuardedOutput g(spec_of({256}), torch::kCPU, 9);
  g.poison();
  // The leading guard's bytes copied past the end (a read before the output, a write after it).
  g.buffer.narrow(0, kGuardBytes + g.bytes, 64).copy_(g.buffer.narrow(0, 0, 64));
  EXPECT_FALSE(g.guards_intact());
  // An earlier poisoning's trailing pattern, kept and written back after the next one.
  g.poison();
  const torch::Tensor old_trail = g.buffer.narrow(0, kGuardBytes + g.bytes, 64).clone();
  g.poison();
  g.buffer.narrow(0, kGuardBytes + g.bytes, 64).copy_(old_trail);
  EXPECT_FALSE(g.guards_intact());
  // Another output's guard (another key) is another pattern too.
  GuardedOutput other(spec_of({256}), torch::kCPU, 10);
  other.poison();
  g.poison();
  g.buffer.narrow(0, kGuardBytes + g.bytes, 64).copy_(other.buffer.narrow(0, kGuardBytes + other.bytes, 64));
  EXPECT_FALSE(g.guards_intact());
}

// Outputs whose size is not a multiple of 4 bytes (bool) still get whole patterns in their guards.
TEST(GuardedOutput, OddSizedOutputs) {
  GuardedOutput g(spec_of({7}, DType::b8), torch::kCPU, 3);
  EXPECT_EQ(g.bytes, 7);
  g.poison();
  EXPECT_TRUE(g.guards_intact());
  const int64_t at = kGuardBytes + g.bytes + 1;  // one byte of the trailing guard, changed
  write_bytes(g, at, 1, static_cast<uint8_t>(~g.buffer[at].item<uint8_t>()));
  EXPECT_FALSE(g.guards_intact());
}

}  // namespace
}  // namespace kbrl::gpu

// The pooling generator (tasks 41-43 max pooling, 44-46 average pooling in 1, 2 and 3 dimensions):
// coverage, space sizes, tokenization, the expert configuration, launch plans over the task's own
// tensors, sources that follow the knobs, and every legal configuration compiled by NVRTC for
// sm_90a (no GPU needed). Numerical correctness (output sizes, NaN propagation, padding, the
// average's divisor) is checked on a GPU: ctest/kernels/test_generator_gpu.cpp runs every covered
// task through the evaluator; this test does not check numbers on the CPU.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "generator_testing.h"

#include <kbrl/error.h>
#include <kernels/candidate_file.h>
#include <kernels/generator.h>
#include <reference/task_registry.h>

namespace kbrl {
namespace {

const std::vector<int> kPoolingTasks = {41, 42, 43, 44, 45, 46};

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

bool is_max(int id) { return id <= 43; }

bool unsafe(const Config& c) {
  return c.at("precision") != "fp32" || c.at("fast_math") != "off" || c.at("tail") != "safe";
}

TEST(PoolingGenerator, Coverage) {
  for (int id : kPoolingTasks) EXPECT_EQ(generator_for(id).name(), "pooling");
  const std::vector<int> covered = covered_tasks();
  for (int id : kPoolingTasks)
    EXPECT_NE(std::find(covered.begin(), covered.end(), id), covered.end()) << id;
  const Generator& g = generator_for(41);
  for (int id = 1; id <= 100; ++id) EXPECT_EQ(g.covers(id), id >= 41 && id <= 46) << id;
  EXPECT_THROW(g.space(task_spec(19, Scale::small)), InputError);
  EXPECT_THROW(g.expert(task_spec(19, Scale::small)), InputError);
}

TEST(PoolingGenerator, SpaceSizesTokensAndKnobNames) {
  const std::map<int, int64_t> expected = {{41, 288}, {42, 288}, {43, 288},
                                           {44, 432}, {45, 432}, {46, 432}};
  for (int id : kPoolingTasks) {
    const TaskSpec task = task_spec(id, Scale::kernelbench);
    const KnobSpace space = generator_for(id).space(task);
    const int64_t size = space.size();
    EXPECT_GE(size, 32) << id;
    EXPECT_LE(size, 1024) << id;
    EXPECT_EQ(size, expected.at(id)) << id;
    for (const auto& k : space.knobs()) EXPECT_TRUE(is_canonical_knob(k.name)) << k.name;
    const std::vector<Config> all = space.enumerate();
    EXPECT_EQ(static_cast<int64_t>(all.size()), size);
    // The space does not depend on the scale.
    EXPECT_EQ(generator_for(id).space(task_spec(id, Scale::small)).enumerate(), all) << id;
    // Tokens round-trip, and every legal configuration's tokens are allowed by the masks.
    for (const Config& c : all) {
      const std::vector<int> tokens = space.tokenize(c);
      ASSERT_EQ(tokens.size(), space.knobs().size());
      EXPECT_EQ(space.detokenize(tokens), c);
      for (size_t k = 0; k < tokens.size(); ++k) {
        const std::vector<bool> mask = space.legal_mask(std::span<const int>(tokens.data(), k));
        EXPECT_TRUE(mask.at(static_cast<size_t>(tokens[k]))) << c.str() << " at " << k;
      }
      if (is_max(id)) EXPECT_EQ(c.at("fast_math"), "off") << c.str();
    }
  }
}

TEST(PoolingGenerator, ExpertIsLegalAndSafe) {
  for (int id : kPoolingTasks) {
    for (const Scale scale : {Scale::kernelbench, Scale::small}) {
      const TaskSpec task = task_spec(id, scale);
      const Generator& g = generator_for(id);
      const Config expert = g.expert(task);
      EXPECT_TRUE(g.space(task).is_legal(expert)) << g.space(task).why_illegal(expert);
      EXPECT_FALSE(unsafe(expert)) << expert.str();
      EXPECT_TRUE(g.generate(task, expert).options.empty());
    }
  }
}

TEST(PoolingGenerator, RejectsIllegalConfigs) {
  const TaskSpec task = task_spec(44, Scale::small);
  const Generator& g = generator_for(44);
  Config c = g.expert(task);
  c.set("precision", "fp16_compute");
  c.set("fast_math", "on");  // one unsafe precision knob at a time
  EXPECT_THROW(g.generate(task, c), InputError);
  c = g.expert(task);
  c.set("block", "1024");
  EXPECT_THROW(g.generate(task, c), InputError);
  // Max pooling has no arithmetic for fast-math.
  const TaskSpec t41 = task_spec(41, Scale::small);
  c = g.expert(t41);
  c.set("fast_math", "on");
  EXPECT_THROW(g.generate(t41, c), InputError);
  EXPECT_THROW(g.generate(task_spec(19, Scale::small), g.expert(task)), InputError);
}

TEST(PoolingGenerator, PlansUseOnlyTheTasksArguments) {
  int64_t checked = 0;
  for (const Scale scale : {Scale::kernelbench, Scale::small}) {
    for (int id : kPoolingTasks) {
      const TaskSpec task = task_spec(id, scale);
      const Generator& g = generator_for(id);
      const auto& in = task.inputs[0].shape;
      const auto& out = task.outputs[0].shape;
      ASSERT_EQ(in.size(), out.size());
      const int64_t planes = in[0] * in[1];
      for (const Config& config : g.space(task).enumerate()) {
        const Candidate c = g.generate(task, config);
        EXPECT_EQ(c.task_id, id);
        ASSERT_EQ(c.launches.size(), 1u);
        const Launch& l = c.launches[0];
        const bool tile = config.at("variant") == "smem_tile";
        EXPECT_EQ(l.kernel, tile ? "kbrl_pool_tile" : "kbrl_pool");
        EXPECT_EQ(l.block.x, config.integer("block"));
        EXPECT_EQ(l.block.y * l.block.z * l.grid.y * l.grid.z, 1u);
        EXPECT_GE(l.grid.x, 1u);
        EXPECT_LE(l.grid.x, 2147483647u);
        if (config.at("grid") == "waves") {
          EXPECT_LE(static_cast<int64_t>(l.grid.x) * config.integer("block"), 2 * 132 * 2048);
        }
        if (tile) {
          EXPECT_GT(l.shared_bytes, 0u);
          EXPECT_LE(l.shared_bytes, 128u * 1024u);
        } else {
          EXPECT_EQ(l.shared_bytes, 0u);
          if (config.at("grid") == "exact") {
            const int64_t per_block = config.integer("block") * config.integer("items_per_thread");
            EXPECT_EQ(static_cast<int64_t>(l.grid.x),
                      (task.outputs[0].numel() + per_block - 1) / per_block);
          }
        }
        EXPECT_TRUE(c.scratch.empty());
        ASSERT_EQ(l.args.size(), tile ? 10u : 9u);
        EXPECT_EQ(l.args[0], (KernelArg{ArgKind::input, 0}));
        EXPECT_EQ(l.args[1], (KernelArg{ArgKind::output, 0}));
        EXPECT_EQ(l.args[2], (KernelArg{ArgKind::i64, 0, 0.0, planes}));
        // (d, h, w) of the input, then of the output; 1 for dimensions the task does not have.
        const size_t nd = in.size() - 2;
        for (size_t a = 0; a < 3; ++a) {
          const int64_t iv = a < 3 - nd ? 1 : in[2 + a - (3 - nd)];
          const int64_t ov = a < 3 - nd ? 1 : out[2 + a - (3 - nd)];
          EXPECT_EQ(l.args[3 + a], (KernelArg{ArgKind::i64, 0, 0.0, iv})) << id << " " << a;
          EXPECT_EQ(l.args[6 + a], (KernelArg{ArgKind::i64, 0, 0.0, ov})) << id << " " << a;
        }
        EXPECT_EQ(c.options.empty(), config.at("fast_math") == "off");
        if (checked++ % 37 == 0) {
          const Candidate parsed =
              parse_candidate_file(candidate_file_text(c, task, {"header"}), task, "gen.cu");
          EXPECT_EQ(parsed.launches, c.launches);
          EXPECT_EQ(parsed.options, c.options);
        }
      }
    }
  }
}

TEST(PoolingGenerator, OutputSizesAreTorchs) {
  // floor((n + 2p - d(k - 1) - 1) / s) + 1 along every spatial dimension.
  EXPECT_EQ(task_spec(41, Scale::kernelbench).outputs[0].shape,
            (std::vector<int64_t>{64, 192, 65523}));
  EXPECT_EQ(task_spec(42, Scale::kernelbench).outputs[0].shape,
            (std::vector<int64_t>{32, 64, 511, 511}));
  EXPECT_EQ(task_spec(43, Scale::kernelbench).outputs[0].shape,
            (std::vector<int64_t>{16, 32, 62, 62, 62}));
  EXPECT_EQ(task_spec(44, Scale::kernelbench).outputs[0].shape,
            (std::vector<int64_t>{64, 128, 65537}));
  EXPECT_EQ(task_spec(45, Scale::kernelbench).outputs[0].shape,
            (std::vector<int64_t>{16, 64, 186, 186}));
  EXPECT_EQ(task_spec(46, Scale::kernelbench).outputs[0].shape,
            (std::vector<int64_t>{16, 32, 64, 64, 128}));
}

TEST(PoolingGenerator, SourcesFollowTheKnobs) {
  const TaskSpec task = task_spec(42, Scale::kernelbench);
  const Generator& g = generator_for(42);
  const KnobSpace space = g.space(task);
  auto with = [&](const TaskSpec& t, const char* overrides) {
    const Generator& gen = generator_for(t.id);
    return gen.generate(t, gen.space(t).with_overrides(gen.expert(t), Config::parse(overrides)));
  };
  const Candidate base = g.generate(task, g.expert(task));
  EXPECT_TRUE(contains(base.source, "kbrl_pool_tile"));
  EXPECT_TRUE(contains(base.source, "constexpr int KH = 4, SH = 1, PH = 1, LH = 1;"));
  EXPECT_TRUE(contains(base.source, "constexpr int KD = 1, SD = 1, PD = 0, LD = 1;"));
  EXPECT_TRUE(contains(base.source, "if (v > a || v != v) a = v;"));
  EXPECT_TRUE(contains(base.source, "#define KBRL_PAD_VALUE KBRL_NEG_INF"));
  EXPECT_TRUE(contains(base.source, "__stcs("));
  EXPECT_TRUE(contains(base.source, "constexpr int kItems = 2;"));
  EXPECT_FALSE(contains(with(task, "cache_hint=none").source, "__stcs("));
  EXPECT_TRUE(contains(with(task, "items_per_thread=4").source, "constexpr int kItems = 4;"));
  EXPECT_TRUE(contains(with(task, "variant=direct").source, "pool_one("));
  EXPECT_FALSE(contains(with(task, "variant=direct").source, "__shared__"));
  EXPECT_TRUE(contains(with(task, "precision=fp16_compute").source, "__hgt("));
  EXPECT_TRUE(contains(with(task, "tail=dropped").source, "tail=dropped"));
  EXPECT_TRUE(contains(with(task, "tail=dropped,variant=direct").source, "tail=dropped"));
  // block and grid change only the launch (and the tile's shared memory).
  const Candidate other = with(task, "block=128,grid=waves");
  EXPECT_EQ(other.source, base.source);
  EXPECT_NE(other.launches, base.launches);
  EXPECT_EQ(with(task, "variant=direct,block=512").source, with(task, "variant=direct").source);
  // Both scales share the source (shapes are kernel arguments).
  EXPECT_EQ(g.generate(task_spec(42, Scale::small), g.expert(task)).source, base.source);
  // smem_tile's region: 42's tile of 512 outputs is 128 wide and 4 high; its input 7 x 131.
  EXPECT_EQ(base.launches[0].shared_bytes, 7u * 131u * 4u);
  EXPECT_EQ(base.launches[0].args.back(), (KernelArg{ArgKind::i64, 0, 0.0, 7}));
  // Average pooling: padding adds 0, the divisor is torch's, fast-math divides with __fdividef.
  const TaskSpec t46 = task_spec(46, Scale::kernelbench);
  const Candidate c46 = with(t46, "");
  EXPECT_TRUE(contains(c46.source, "#define KBRL_PAD_VALUE 0.0f"));
  EXPECT_TRUE(contains(c46.source, "return a / div;"));
  EXPECT_TRUE(contains(c46.source, "axis_size(od, KD, SD, PD, ID)"));
  EXPECT_TRUE(contains(with(t46, "fast_math=on").source, "__fdividef"));
  EXPECT_EQ(with(t46, "fast_math=on").options, std::vector<std::string>{"--use_fast_math"});
  EXPECT_TRUE(contains(with(t46, "precision=fp16_compute").source, "__hadd("));
  // 41's dilation is in the window; 44's (average pooling) is 1.
  EXPECT_TRUE(contains(with(task_spec(41, Scale::small), "").source,
                       "constexpr int KW = 8, SW = 1, PW = 4, LW = 3;"));
  EXPECT_TRUE(contains(with(task_spec(44, Scale::small), "").source,
                       "constexpr int KW = 8, SW = 1, PW = 4, LW = 1;"));
  // 45 stages one row tap at a time: a 32 x 16 tile, 16 input rows of 352.
  const Candidate c45 = with(task_spec(45, Scale::kernelbench), "");
  EXPECT_TRUE(contains(c45.source, "const int RH = TH;"));
  EXPECT_EQ(c45.launches[0].shared_bytes, 16u * 352u * 4u);
}

// Every legal configuration of every task compiles for sm_90a: configurations are grouped by
// (source, options) and each distinct unit compiled once. Shapes are kernel arguments, so the small
// scale's sources are the KernelBench scale's (checked above) and only that scale is compiled.
// Unsafe configurations show in the precision audit; safe ones show nothing reduced.
TEST(PoolingGenerator, EveryConfigCompilesAndUnsafeOnesAreAudited) {
  std::vector<TaskSpec> tasks;
  for (int id : kPoolingTasks) tasks.push_back(task_spec(id, Scale::kernelbench));
  testing::expect_every_config_compiles(tasks, "pooling");
}

}  // namespace
}  // namespace kbrl

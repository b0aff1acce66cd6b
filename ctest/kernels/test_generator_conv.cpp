// The conv generator (standard Conv1d/2d/3d tasks 50, 54-56, 59, 60, 62, 63, 66, 67, 76, 80, 87;
// depthwise 82-85; depthwise-separable 86): coverage, space sizes, tokenization, the expert
// configuration, launch plans over the task's own tensors and declared scratch, sources that follow
// the knobs, and every legal configuration compiled by NVRTC for sm_90a (no GPU needed). Numerical
// correctness is checked on a GPU by ctest/kernels/test_generator_gpu.cpp, which covers every
// covered task automatically, not on CPU.
#include <algorithm>
#include <set>
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

const std::vector<int> kStandard = {50, 54, 55, 56, 59, 60, 62, 63, 66, 67, 76, 80, 87};
const std::vector<int> kDepthwise = {82, 83, 84, 85};
constexpr int kSeparable = 86;

std::vector<int> all_tasks() {
  std::vector<int> ids = kStandard;
  ids.insert(ids.end(), kDepthwise.begin(), kDepthwise.end());
  ids.push_back(kSeparable);
  std::sort(ids.begin(), ids.end());
  return ids;
}

bool is_depthwise(int id) {
  return std::find(kDepthwise.begin(), kDepthwise.end(), id) != kDepthwise.end();
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

bool unsafe(const Config& c) {
  return c.at("precision") != "fp32" || c.at("tail") != "safe";
}

int64_t expected_size(int id) {
  if (is_depthwise(id)) return 108;
  if (id == kSeparable) return 96;
  return 176;
}

TEST(ConvGenerator, Coverage) {
  const std::vector<int> ids = all_tasks();
  for (int id : ids) EXPECT_EQ(generator_for(id).name(), "conv") << id;
  const std::vector<int> covered = covered_tasks();
  for (int id : ids) EXPECT_NE(std::find(covered.begin(), covered.end(), id), covered.end()) << id;
  const Generator& g = generator_for(50);
  for (int id = 1; id <= 100; ++id)
    EXPECT_EQ(g.covers(id), std::find(ids.begin(), ids.end(), id) != ids.end()) << id;
  // Transposed convolutions belong to another family.
  for (int id : {57, 58, 61, 64, 65, 68, 69, 70, 71, 72, 73, 74, 75, 77, 78, 79, 81})
    EXPECT_FALSE(g.covers(id)) << id;
  EXPECT_THROW(g.space(task_spec(57, Scale::small)), InputError);
  EXPECT_THROW(g.expert(task_spec(19, Scale::small)), InputError);
  EXPECT_THROW(g.generate(task_spec(19, Scale::small), g.expert(task_spec(50, Scale::small))),
               InputError);
}

TEST(ConvGenerator, SpaceSizesTokensAndKnobNames) {
  const std::set<std::string> family_knobs = {"rows_per_thread"};
  for (int id : all_tasks()) {
    const TaskSpec task = task_spec(id, Scale::kernelbench);
    const KnobSpace space = generator_for(id).space(task);
    const int64_t size = space.size();
    EXPECT_GE(size, 32) << id;
    EXPECT_LE(size, 1024) << id;
    EXPECT_EQ(size, expected_size(id)) << id;
    for (const auto& k : space.knobs())
      EXPECT_TRUE(is_canonical_knob(k.name) || family_knobs.count(k.name)) << k.name;
    const std::vector<Config> all = space.enumerate();
    EXPECT_EQ(static_cast<int64_t>(all.size()), size);
    EXPECT_EQ(generator_for(id).space(task_spec(id, Scale::small)).enumerate(), all) << id;
    for (const Config& c : all) {
      const std::vector<int> tokens = space.tokenize(c);
      ASSERT_EQ(tokens.size(), space.knobs().size());
      EXPECT_EQ(space.detokenize(tokens), c);
      for (size_t k = 0; k < tokens.size(); ++k) {
        const std::vector<bool> mask = space.legal_mask(std::span<const int>(tokens.data(), k));
        EXPECT_TRUE(mask.at(static_cast<size_t>(tokens[k]))) << c.str() << " at " << k;
      }
    }
  }
}

TEST(ConvGenerator, ExpertIsLegalAndSafe) {
  for (int id : all_tasks()) {
    for (const Scale scale : {Scale::kernelbench, Scale::small}) {
      const TaskSpec task = task_spec(id, scale);
      const Generator& g = generator_for(id);
      const Config expert = g.expert(task);
      EXPECT_TRUE(g.space(task).is_legal(expert)) << id << ": " << g.space(task).why_illegal(expert);
      EXPECT_FALSE(unsafe(expert)) << expert.str();
      if (!is_depthwise(id)) {
        EXPECT_NE(expert.at("variant"), "direct") << id;
      }
      EXPECT_TRUE(g.generate(task, expert).options.empty());
    }
  }
}

TEST(ConvGenerator, RejectsIllegalConfigs) {
  const TaskSpec task = task_spec(55, Scale::small);
  const Generator& g = generator_for(55);
  Config c = g.expert(task);
  c.set("precision", "tf32");  // tensor cores need items_per_thread=32
  EXPECT_THROW(g.generate(task, c), InputError);
  c.set("items_per_thread", "32");
  EXPECT_THROW(g.generate(task, c), InputError);  // and tile_k=16
  c.set("tile_k", "16");
  EXPECT_NO_THROW(g.generate(task, c));
  c.set("tail", "dropped");  // one unsafe knob at a time
  EXPECT_THROW(g.generate(task, c), InputError);
  c = g.expert(task);
  c.set("items_per_thread", "8");  // 8 outputs per thread only for the direct variant
  EXPECT_THROW(g.generate(task, c), InputError);
  c = g.expert(task);
  c.set("tile_n", "32");
  c.set("items_per_thread", "64");
  c.set("tile_m", "64");  // 32 threads
  EXPECT_THROW(g.generate(task, c), InputError);
  c = g.expert(task);
  c.set("stages", "1");  // one stage only with tile_k=16
  EXPECT_THROW(g.generate(task, c), InputError);
  c = g.expert(task);
  c.set("variant", "direct");  // direct with GEMM tile knobs
  EXPECT_THROW(g.generate(task, c), InputError);
  c = g.expert(task);
  c.set("block", "256");
  EXPECT_THROW(g.generate(task, c), InputError);
  const TaskSpec t82 = task_spec(82, Scale::small);
  Config d = generator_for(82).expert(t82);
  d.set("precision", "fp16_compute");
  d.set("tail", "dropped");
  EXPECT_THROW(generator_for(82).generate(t82, d), InputError);
  d = generator_for(82).expert(t82);
  d.set("rows_per_thread", "3");
  EXPECT_THROW(generator_for(82).generate(t82, d), InputError);
  const TaskSpec t86 = task_spec(86, Scale::small);
  Config s = generator_for(86).expert(t86);
  s.set("variant", "implicit_gemm");
  EXPECT_THROW(generator_for(86).generate(t86, s), InputError);
}

/// The launch plans use only the task's input, parameters, output and the declared scratch, with
/// grid and block within CUDA's limits; every output position tile is launched unless tail=dropped.
TEST(ConvGenerator, PlansUseOnlyTheTasksArguments) {
  int64_t checked = 0;
  for (const Scale scale : {Scale::kernelbench, Scale::small}) {
    for (int id : all_tasks()) {
      const TaskSpec task = task_spec(id, scale);
      const Generator& g = generator_for(id);
      for (const Config& config : g.space(task).enumerate()) {
        const Candidate c = g.generate(task, config);
        EXPECT_EQ(c.task_id, id);
        EXPECT_TRUE(c.options.empty());
        ASSERT_FALSE(c.launches.empty());
        size_t expected_launches = is_depthwise(id) ? 1 : 2;
        if (id == kSeparable && config.at("variant") == "two_pass") expected_launches = 3;
        EXPECT_EQ(c.launches.size(), expected_launches) << config.str();
        for (const ScratchBuffer& b : c.scratch) EXPECT_GT(b.bytes, 0) << b.name;
        bool writes_output = false;
        for (const Launch& l : c.launches) {
          EXPECT_TRUE(contains(c.source, "void " + l.kernel + "(") ||
                      contains(c.source, ") " + l.kernel + "("))
              << l.kernel;
          EXPECT_GE(l.grid.x, 1u);
          EXPECT_LE(l.grid.x, 2147483647u);
          EXPECT_EQ(l.grid.y * l.grid.z * l.block.y * l.block.z, 1u);
          EXPECT_GE(l.block.x, 32u);
          EXPECT_LE(l.block.x, 1024u);
          EXPECT_EQ(l.block.x % 32, 0u);
          EXPECT_EQ(l.shared_bytes, 0u);
          for (const KernelArg& a : l.args) {
            switch (a.kind) {
              case ArgKind::input: EXPECT_EQ(a.index, 0); break;
              case ArgKind::parameter:
                EXPECT_LT(a.index, static_cast<int>(task.parameters.size()));
                break;
              case ArgKind::output:
                EXPECT_EQ(a.index, 0);
                writes_output = true;
                break;
              case ArgKind::scratch:
                EXPECT_LT(a.index, static_cast<int>(c.scratch.size()));
                break;
              case ArgKind::i32:
              case ArgKind::i64: break;
              default: ADD_FAILURE() << "unexpected argument kind in " << config.str();
            }
          }
        }
        EXPECT_TRUE(writes_output);
        // The last launch writes y; its grid covers every output tile unless tail=dropped.
        const Launch& last = c.launches.back();
        EXPECT_EQ(last.args[is_depthwise(id) ? 2 : 3], (KernelArg{ArgKind::output, 0}));
        if (!is_depthwise(id) && config.at("tail") == "safe") {
          const auto& y = task.outputs[0].shape;
          int64_t positions = y[0];
          for (size_t i = 2; i < y.size(); ++i) positions *= y[i];
          const int64_t tile_m = config.integer("tile_m");
          const int64_t tile_n =
              config.at("variant") == "direct" ? config.integer("items_per_thread")
                                               : config.integer("tile_n");
          EXPECT_EQ(static_cast<int64_t>(last.grid.x),
                    ((positions + tile_m - 1) / tile_m) * ((y[1] + tile_n - 1) / tile_n))
              << config.str();
        }
        if (is_depthwise(id)) {
          EXPECT_TRUE(c.scratch.empty());
          EXPECT_EQ(last.block.x, config.integer("block"));
        }
        if (checked++ % 97 == 0) {
          const Candidate parsed =
              parse_candidate_file(candidate_file_text(c, task, {"header"}), task, "gen.cu");
          EXPECT_EQ(parsed.launches, c.launches);
          EXPECT_EQ(parsed.scratch, c.scratch);
          EXPECT_EQ(parsed.options, c.options);
        }
      }
    }
  }
  EXPECT_GT(checked, 0);
}

TEST(ConvGenerator, SourcesFollowTheKnobs) {
  const TaskSpec task = task_spec(55, Scale::kernelbench);
  const Generator& g = generator_for(55);
  const KnobSpace space = g.space(task);
  auto with = [&](const TaskSpec& t, const char* overrides) {
    const Generator& gt = generator_for(t.id);
    return gt.generate(t, gt.space(t).with_overrides(gt.expert(t), Config::parse(overrides)));
  };
  const Candidate base = g.generate(task, g.expert(task));
  EXPECT_TRUE(contains(base.source, "kbrl_conv_igemm("));
  EXPECT_TRUE(contains(base.source, "#define TILE_M 128"));
  EXPECT_TRUE(contains(base.source, "#define TM 8"));
  EXPECT_TRUE(contains(base.source, "#define TN 8"));
  EXPECT_TRUE(contains(base.source, "Two stages"));
  EXPECT_FALSE(contains(base.source, "wmma"));
  EXPECT_EQ(base.launches[0].kernel, "kbrl_conv_prep");
  EXPECT_EQ(base.launches[1].kernel, "kbrl_conv_igemm");
  EXPECT_EQ(base.launches[1].block.x, 128u * 128u / 64u);
  EXPECT_TRUE(contains(with(task, "stages=1,tile_k=16").source, "One stage"));
  EXPECT_TRUE(contains(with(task, "tile_k=16").source, "#define TILE_K 16"));
  EXPECT_TRUE(contains(with(task, "items_per_thread=32").source, "#define TN 4"));
  const Candidate tf32 = with(task, "precision=tf32,items_per_thread=32,tile_k=16");
  EXPECT_TRUE(contains(tf32.source, "wmma::mma_sync"));
  EXPECT_FALSE(contains(tf32.source, "a_lo"));
  EXPECT_TRUE(contains(with(task, "precision=tf32x3,items_per_thread=32,tile_k=16").source, "a_lo"));
  const Candidate direct =
      with(task, "variant=direct,tile_n=32,items_per_thread=16,stages=1,tile_m=64");
  EXPECT_TRUE(contains(direct.source, "kbrl_conv_direct("));
  EXPECT_EQ(direct.launches[1].block.x, 64u);
  // grid and tail change only the launch; shapes are arguments, so tasks share sources.
  const Candidate other = with(task, "grid=m_major,tail=dropped");
  EXPECT_EQ(other.source, base.source);
  EXPECT_NE(other.launches, base.launches);
  const TaskSpec t63 = task_spec(63, Scale::kernelbench);
  EXPECT_EQ(with(t63, "tile_n=128").source, with(task, "tile_n=128").source);
  EXPECT_EQ(with(task_spec(63, Scale::small), "tile_n=128").source, with(t63, "tile_n=128").source);
  // Bias (task 50) through the prep kernel that copies it; no bias elsewhere.
  const TaskSpec t50 = task_spec(50, Scale::kernelbench);
  const Candidate c50 = with(t50, "");
  EXPECT_EQ(c50.launches[0].kernel, "kbrl_conv_prep_bias");
  EXPECT_EQ(c50.launches[0].args[1], (KernelArg{ArgKind::parameter, 1}));
  // Depthwise: the kernel's shape is compiled in; fp16_compute shows in the source.
  const TaskSpec t85 = task_spec(85, Scale::kernelbench);
  const Candidate c85 = with(t85, "");
  EXPECT_TRUE(contains(c85.source, "#define DW_KH 3\n#define DW_KW 7"));
  EXPECT_TRUE(contains(c85.source, "#define DW_ROWS 4"));
  EXPECT_TRUE(contains(with(t85, "precision=fp16_compute").source, "__hmul("));
  EXPECT_EQ(with(t85, "block=64").source, c85.source);
  EXPECT_EQ(with(t85, "block=64").launches[0].block.x, 64u);
  // 86: fused computes the depthwise conv while staging; two_pass goes through scratch.
  const TaskSpec t86 = task_spec(86, Scale::kernelbench);
  const Candidate fused = with(t86, "");
  EXPECT_TRUE(contains(fused.source, "#define DKH 3"));
  EXPECT_EQ(fused.scratch.size(), 2u);
  const Candidate two = with(t86, "variant=two_pass");
  EXPECT_EQ(two.launches[0].kernel, "kbrl_conv_dw");
  ASSERT_EQ(two.scratch.size(), 3u);
  EXPECT_EQ(two.scratch[2].bytes, 16LL * 64 * 512 * 512 * 4);
  EXPECT_EQ(two.launches[2].args[0], (KernelArg{ArgKind::scratch, 2}));
}

// Every legal configuration of every task compiles for sm_90a; configurations are grouped by
// (source, options) and each distinct unit compiled once (shapes are kernel arguments, so the
// small scale adds no unit). Unsafe precisions show in the precision audit; safe ones show nothing.
TEST(ConvGenerator, EveryConfigCompilesAndUnsafeOnesAreAudited) {
  std::vector<TaskSpec> tasks;
  for (int id : all_tasks()) tasks.push_back(task_spec(id, Scale::kernelbench));
  testing::expect_every_config_compiles(tasks, "conv");
}

}  // namespace
}  // namespace kbrl

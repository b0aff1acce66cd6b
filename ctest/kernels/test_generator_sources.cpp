// The generated candidates do not change unnoticed: for every task and every legal configuration of
// its knob space, at both scales, the candidate-file text (plan, options and CUDA source) is hashed,
// and each task's digest is compared with the committed one (generator_sources.sha256 beside this
// file). A refactoring of the generators (their device code lives in kernels/generators/cuda/) must
// keep every digest; a deliberate change to a kernel regenerates the file:
//   KBRL_UPDATE_GENERATOR_DIGESTS=1 ctest -R test_generator_sources
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include <kbrl/sha256.h>
#include <kernels/generator.h>
#include <reference/task_registry.h>

namespace kbrl {
namespace {

/// The committed digests (KBRL_SOURCE_DIR is set by kbrl_add_test).
std::string digest_file() {
  const char* root = std::getenv("KBRL_SOURCE_DIR");
  return std::string(root ? root : ".") + "/ctest/kernels/generator_sources.sha256";
}

struct TaskDigest {
  int64_t configs = 0;
  std::string digest;
};

/// One task's digest over every legal configuration at both scales, and its configuration count.
TaskDigest digest_task(int id) {
  const Generator& g = generator_for(id);
  Sha256 h;
  TaskDigest d;
  for (const Scale scale : {Scale::kernelbench, Scale::small}) {
    const TaskSpec task = task_spec(id, scale);
    const auto configs = g.space(task).enumerate();
    if (scale == Scale::kernelbench) d.configs = static_cast<int64_t>(configs.size());
    for (const Config& config : configs) {
      h.update_field(config.str());
      h.update_field(candidate_file_text(g.generate(task, config), task));
    }
  }
  d.digest = h.hex_digest();
  return d;
}

std::map<int, TaskDigest> read_digests() {
  std::map<int, TaskDigest> out;
  std::ifstream in(digest_file());
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream row(line);
    int id = 0;
    TaskDigest d;
    row >> id >> d.configs >> d.digest;
    out[id] = d;
  }
  return out;
}

TEST(GeneratorSources, EveryConfigurationByteIdentical) {
  std::map<int, TaskDigest> now;
  int64_t total = 0;
  for (int id : covered_tasks()) {
    now[id] = digest_task(id);
    total += now[id].configs;
  }
  if (std::getenv("KBRL_UPDATE_GENERATOR_DIGESTS") != nullptr) {
    std::ofstream out(digest_file());
    out << "# task  legal_configurations  sha256 over every configuration's candidate-file text at\n"
           "# kernelbench and small scale (ctest/kernels/test_generator_sources.cpp); "
        << total << " configurations, " << 2 * total << " candidates\n";
    for (const auto& [id, d] : now) out << id << ' ' << d.configs << ' ' << d.digest << '\n';
    GTEST_SKIP() << "wrote " << digest_file();
  }
  const auto committed = read_digests();
  ASSERT_FALSE(committed.empty()) << "no digests in " << digest_file();
  EXPECT_EQ(committed.size(), now.size());
  for (const auto& [id, d] : now) {
    const auto it = committed.find(id);
    ASSERT_NE(it, committed.end()) << "task " << id << " has no committed digest";
    EXPECT_EQ(it->second.configs, d.configs) << "task " << id << ": legal configuration count changed";
    EXPECT_EQ(it->second.digest, d.digest) << "task " << id << ": a generated candidate changed";
  }
  std::cout << "checked " << 2 * total << " candidates (" << total << " legal configurations of "
            << now.size() << " tasks at two scales)\n";
}

}  // namespace
}  // namespace kbrl

#pragma once
// The catalog of hand-written candidate files (kernels/known_good/, kernels/adversarial/): which
// task each one is for and the outcome the evaluator must give it. Known-good kernels are correct
// at atol = rtol = 1e-4 against the fp32 reference at both scales; adversarial kernels are reward
// hacks and faults, each of which one of the evaluator's checks must catch. The gpu tests run the
// evaluator over both lists; the unit tests parse and compile every entry.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <kbrl/outcome.h>

namespace kbrl {

struct CatalogKernel {
  std::string name;  // unique over both lists, e.g. "relu" or "write_past_output"
  int task_id = 0;
  std::string file;  // candidate file, relative to the kernels directory
  Outcome expected = Outcome::ok;
  std::string what;  // one line: what the kernel does (and, if adversarial, what must catch it)
};

const std::vector<CatalogKernel>& known_good_kernels();
const std::vector<CatalogKernel>& adversarial_kernels();

/// The entry of either list with this name, or nullptr.
const CatalogKernel* find_catalog_kernel(std::string_view name);

/// The kernels directory: $KBRL_KERNELS_DIR when set and non-empty, else this source tree's
/// kernels/ (fixed at build time).
std::filesystem::path kernels_dir();

/// The candidate file's text, ready for parse_candidate_file. Generated entries (the 10 MB source)
/// get their generated part appended here. Throws InputError when the file cannot be read.
std::string kernel_source(const CatalogKernel& kernel);

}  // namespace kbrl

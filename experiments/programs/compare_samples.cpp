// kbrl-compare-samples A.csv B.csv: the same samples evaluated twice (two processes, two machines,
// two commits), sample by sample: how often the outcome, KernelBench's fast_1 class (correct and
// speedup > 1) and the significant fast_1 class (correct and the speedup interval's lower end above 1)
// agree. The rows must be the same samples (task, sample index and configuration or text). Prints a
// per-task CSV, then the totals; exits 1 when the files do not hold the same samples, 2 on bad input.
#include <cstdio>
#include <map>
#include <string>

#include <kbrl/error.h>

#include <experiments/schemas.h>

namespace {

struct Counts {
  int samples = 0, same_outcome = 0, correct_both = 0;
  int fast_a = 0, fast_b = 0, fast_flips = 0;
  int sig_a = 0, sig_b = 0, sig_flips = 0;
};

void add(Counts& c, const kbrl::schemas::SampleRow& a, const kbrl::schemas::SampleRow& b) {
  const bool fa = a.fast(), fb = b.fast();
  const bool sa = a.significantly_fast(), sb = b.significantly_fast();
  ++c.samples;
  c.same_outcome += a.outcome == b.outcome;
  c.correct_both += a.correct && b.correct;
  c.fast_a += fa;
  c.fast_b += fb;
  c.fast_flips += fa != fb;
  c.sig_a += sa;
  c.sig_b += sb;
  c.sig_flips += sa != sb;
}

void print_row(const std::string& task, const Counts& c) {
  std::printf("%s,%d,%d,%d,%d,%d,%d,%d,%d,%d\n", task.c_str(), c.samples, c.same_outcome, c.correct_both,
              c.fast_a, c.fast_b, c.fast_flips, c.sig_a, c.sig_b, c.sig_flips);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: kbrl-compare-samples A/samples.csv B/samples.csv\n");
    return 2;
  }
  try {
    const auto a = kbrl::schemas::read_samples(argv[1]);
    const auto b = kbrl::schemas::read_samples(argv[2]);
    if (a.size() != b.size()) {
      std::fprintf(stderr, "kbrl-compare-samples: error: %zu samples in %s, %zu in %s\n", a.size(), argv[1],
                   b.size(), argv[2]);
      return 1;
    }
    std::map<int, Counts> by_task;
    Counts all;
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i].task_id != b[i].task_id || a[i].sample != b[i].sample || a[i].config != b[i].config ||
          a[i].text != b[i].text) {
        std::fprintf(stderr,
                     "kbrl-compare-samples: error: row %zu is task %d sample %d in %s but task %d sample %d in %s "
                     "(or their configurations differ): not the same samples\n",
                     i + 1, a[i].task_id, a[i].sample, argv[1], b[i].task_id, b[i].sample, argv[2]);
        return 1;
      }
      add(by_task[a[i].task_id], a[i], b[i]);
      add(all, a[i], b[i]);
    }
    std::printf("task_id,samples,same_outcome,correct_both,fast_1_a,fast_1_b,fast_1_flips,sig_fast_1_a,"
                "sig_fast_1_b,sig_fast_1_flips\n");
    for (const auto& [task, c] : by_task) print_row(std::to_string(task), c);
    print_row("all", all);
    const double n = all.samples > 0 ? all.samples : 1;
    std::printf("# same significant fast_1 class: %d of %d samples (%.1f%%); same plain fast_1 class: %d of %d "
                "(%.1f%%)\n",
                all.samples - all.sig_flips, all.samples, 100.0 * (all.samples - all.sig_flips) / n,
                all.samples - all.fast_flips, all.samples, 100.0 * (all.samples - all.fast_flips) / n);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kbrl-compare-samples: error: %s\n", e.what());
    return 2;
  }
}

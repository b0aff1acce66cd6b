// `kbrl tasks` and `kbrl splits` as a user runs them.
#include <gtest/gtest.h>

#include "cli_testing.h"

namespace kbrl::testing {
namespace {

TEST(CliTasks, CsvHasHeaderAndHundredRows) {
  auto r = run_cli("tasks --csv");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(count_lines(r.output), 101);
  EXPECT_EQ(r.output.substr(0, r.output.find('\n')),
            "id,name,family,split,scale,inputs,outputs,parameters,flops,min_bytes");
  EXPECT_NE(r.output.find("\n19,19_ReLU,elementwise,"), std::string::npos);
}

TEST(CliTasks, SmallScaleAndSplitFilter) {
  auto r = run_cli("tasks --csv --scale small --split eval");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(count_lines(r.output), 21);
  EXPECT_NE(r.output.find(",small,"), std::string::npos);
}

TEST(CliTasks, TableNamesTheScale) {
  auto r = run_cli("tasks --id 1 --id 19");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("2 tasks at scale kernelbench"), std::string::npos) << r.output;
}

TEST(CliTasks, UnknownIdFailsClearly) {
  auto r = run_cli("tasks --id 101");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("unknown task id 101"), std::string::npos) << r.output;
}

TEST(CliTasks, UnknownOptionAndBadValuesFail) {
  EXPECT_NE(run_cli("tasks --bogus").status, 0);
  EXPECT_NE(run_cli("tasks --id seven").status, 0);
  auto r = run_cli("tasks --scale huge");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("unknown scale 'huge'"), std::string::npos) << r.output;
  EXPECT_NE(run_cli("nosuchcommand").status, 0);
}

TEST(CliSplits, ListsTheNamedSplits) {
  auto r = run_cli("splits");
  ASSERT_EQ(r.status, 0) << r.output;
  for (const char* name : {"train", "eval", "subset1", "subset2", "all"})
    EXPECT_NE(r.output.find(name), std::string::npos) << name;
}

}  // namespace
}  // namespace kbrl::testing

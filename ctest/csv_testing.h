#pragma once
// Reads a CSV the programs wrote (header row, then rows) for tests: each row as column -> value.
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <kbrl/csv.h>

namespace kbrl::testing {

struct Csv {
  std::string header;
  std::vector<std::map<std::string, std::string>> rows;
};

/// Every row of `file`; a row whose field count differs from the header's fails the test.
inline Csv read_csv(const std::filesystem::path& file) {
  Csv out;
  std::ifstream in(file);
  EXPECT_TRUE(in.good()) << "cannot read " << file;
  std::getline(in, out.header);
  const std::vector<std::string> columns = csv::split_line(out.header);
  std::string line;
  while (std::getline(in, line)) {
    const std::vector<std::string> fields = csv::split_line(line);
    EXPECT_EQ(fields.size(), columns.size()) << line;
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < columns.size() && i < fields.size(); ++i) row[columns[i]] = fields[i];
    out.rows.push_back(std::move(row));
  }
  return out;
}

}  // namespace kbrl::testing

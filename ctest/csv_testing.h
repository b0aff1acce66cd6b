#pragma once
// Reads a CSV the programs wrote (header row, then rows) for tests: each row as column -> value,
// through the project's one reader (experiments/csv_table.h: a row whose field count differs from
// the header's, or a file that cannot be read, throws and fails the test). Tests using it link
// kbrl::algorithms.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <experiments/csv_table.h>
#include <kbrl/csv.h>

namespace kbrl::testing {

struct Csv {
  std::string header;
  std::vector<std::map<std::string, std::string>> rows;
};

/// Every row of `file`, each as column -> value; `header` is the header line as written.
inline Csv read_csv(const std::filesystem::path& file) {
  const CsvRows csv = kbrl::read_csv(file);
  Csv out;
  for (size_t i = 0; i < csv.columns.size(); ++i) {
    if (i) out.header += ',';
    out.header += csv::field(csv.columns[i]);
  }
  for (const std::vector<std::string>& fields : csv.rows) {
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < csv.columns.size(); ++i) row[csv.columns[i]] = fields[i];
    out.rows.push_back(std::move(row));
  }
  return out;
}

}  // namespace kbrl::testing

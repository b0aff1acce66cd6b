#pragma once
// Every CSV an experiment writes has one schema, defined in experiments/schemas.cpp and checked by
// a golden test. CsvTable writes rows of a schema: the header once, every row flushed at once (a
// run killed mid-way keeps what it wrote), a row of the wrong width is an InternalError. read_csv
// is the one reader of CSV files (ours, or KernelBench's baseline).
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace kbrl {

struct CsvSchema {
  std::string name;                  // e.g. "training_steps"
  std::vector<std::string> columns;  // in order
  /// The header line (no newline).
  std::string header() const;
};

/// A number as CSV cells print it: integers plainly, others with 6 significant digits.
std::string cell(double value);
inline std::string cell(int64_t value) { return std::to_string(value); }
inline std::string cell(int value) { return std::to_string(value); }
inline std::string cell(bool value) { return value ? "1" : "0"; }
inline std::string cell(const std::string& value) { return value; }
inline std::string cell(const char* value) { return value; }

class CsvTable {
 public:
  /// Creates (or truncates) `file`, its directory included, and writes the header. With
  /// `append`, an existing file with the same header is kept and extended (resume); one with a
  /// different header is an InputError naming both.
  CsvTable(const std::filesystem::path& file, CsvSchema schema, bool append = false);
  void row(const std::vector<std::string>& cells);
  const std::filesystem::path& path() const { return file_; }
  const CsvSchema& schema() const { return schema_; }

 private:
  std::filesystem::path file_;
  CsvSchema schema_;
  std::ofstream out_;
};

/// A CSV file read back: the header's columns and every non-empty row's fields.
struct CsvRows {
  std::filesystem::path file;
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;  // each as wide as `columns`
  std::vector<int> lines;                      // each row's line number in the file (1-based)

  /// The index of `name`; InputError naming the file when it has no such column.
  size_t column(std::string_view name) const;
  /// Row `row`'s field in column `name`.
  const std::string& at(size_t row, std::string_view name) const { return rows[row][column(name)]; }
  /// "file:line" of row `row`, for messages.
  std::string where(size_t row) const;
};

/// Reads `file` (RFC 4180 fields, no embedded newlines; a trailing \r is dropped; empty lines are
/// skipped). InputError when it cannot be read, is empty, or a row's field count differs from the
/// header's (naming file and line).
CsvRows read_csv(const std::filesystem::path& file);
/// read_csv, and the header must be `schema`'s: else an InputError naming both headers.
CsvRows read_csv(const std::filesystem::path& file, const CsvSchema& schema);

}  // namespace kbrl

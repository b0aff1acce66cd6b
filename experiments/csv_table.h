#pragma once
// Every CSV an experiment writes has one schema, defined in experiments/schemas.cpp and checked by
// a golden test. CsvTable writes rows of a schema: the header once, every row flushed at once (a
// run killed mid-way keeps what it wrote), a row of the wrong width is an InternalError.
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

}  // namespace kbrl

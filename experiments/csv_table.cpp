#include "csv_table.h"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <kbrl/csv.h>
#include <kbrl/error.h>

namespace kbrl {

std::string CsvSchema::header() const {
  std::string h;
  for (size_t i = 0; i < columns.size(); ++i) h += (i ? "," : "") + csv::field(columns[i]);
  return h;
}

std::string cell(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (value == std::floor(value) && std::fabs(value) < 1e15) return fmt::format("{}", static_cast<int64_t>(value));
  return fmt::format("{:.6g}", value);
}

CsvTable::CsvTable(const std::filesystem::path& file, CsvSchema schema, bool append)
    : file_(file), schema_(std::move(schema)) {
  if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path());
  bool write_header = true;
  if (append && std::filesystem::exists(file)) {
    std::ifstream in(file);
    std::string first;
    std::getline(in, first);
    KBRL_CHECK_INPUT(first == schema_.header(),
                     "{} has the header\n  {}\nnot the {} schema's\n  {}\n(move it away or pick another "
                     "output directory)",
                     file.string(), first, schema_.name, schema_.header());
    write_header = false;
  }
  out_.open(file, append ? std::ios::app : std::ios::trunc);
  KBRL_CHECK_INPUT(out_.good(), "cannot write {}", file.string());
  if (write_header) out_ << schema_.header() << "\n" << std::flush;
}

void CsvTable::row(const std::vector<std::string>& cells) {
  KBRL_ASSERT(cells.size() == schema_.columns.size(), "{}: a row of {} cells for {} columns",
              schema_.name, cells.size(), schema_.columns.size());
  std::string line;
  for (size_t i = 0; i < cells.size(); ++i) line += (i ? "," : "") + csv::field(cells[i]);
  out_ << line << "\n" << std::flush;
  KBRL_CHECK_INPUT(out_.good(), "writing {} failed", file_.string());
}

size_t CsvRows::column(std::string_view name) const {
  for (size_t i = 0; i < columns.size(); ++i)
    if (columns[i] == name) return i;
  throw InputError(fmt::format("{}: no column '{}' (its columns: {})", file.string(), name, fmt::join(columns, ",")));
}

std::string CsvRows::where(size_t row) const { return fmt::format("{}:{}", file.string(), lines.at(row)); }

CsvRows read_csv(const std::filesystem::path& file) {
  std::ifstream in(file);
  KBRL_CHECK_INPUT(in.good() && !std::filesystem::is_directory(file), "cannot read {}", file.string());
  CsvRows out;
  out.file = file;
  std::string line;
  int line_no = 0;
  auto next = [&] {
    if (!std::getline(in, line)) return false;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    return true;
  };
  KBRL_CHECK_INPUT(next() && !line.empty(), "{} is empty: a CSV starts with its header", file.string());
  out.columns = csv::split_line(line);
  while (next()) {
    if (line.empty()) continue;
    std::vector<std::string> fields = csv::split_line(line);
    KBRL_CHECK_INPUT(fields.size() == out.columns.size(), "{}:{}: {} fields, the header has {}", file.string(),
                     line_no, fields.size(), out.columns.size());
    out.rows.push_back(std::move(fields));
    out.lines.push_back(line_no);
  }
  return out;
}

CsvRows read_csv(const std::filesystem::path& file, const CsvSchema& schema) {
  CsvRows rows = read_csv(file);
  KBRL_CHECK_INPUT(rows.columns == schema.columns,
                   "{} is not a {} CSV of this kbrl (written by another version? run it again): its header is\n  "
                   "{}\nnot\n  {}",
                   file.string(), schema.name, fmt::join(rows.columns, ","), schema.header());
  return rows;
}

}  // namespace kbrl

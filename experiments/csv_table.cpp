#include "csv_table.h"

#include <cmath>

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

}  // namespace kbrl

#pragma once
// The records `kbrl serve` keeps in memory to answer a repeated item without evaluating it again:
// the most recent ones, up to a count and a byte budget (a candidate may be 256 KiB), the least
// recently stored dropped first. Not thread-safe: the scheduler's lock guards it.
#include <cstddef>
#include <list>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include <harness/record/eval_record.h>

namespace kbrl::serving {

class RecentRecords {
 public:
  RecentRecords(size_t max_records, size_t max_bytes) : max_records_(max_records), max_bytes_(max_bytes) {}

  void remember(const std::string& key, const EvalRecord& record);
  std::optional<EvalRecord> find(const std::string& key) const;
  size_t bytes() const { return bytes_; }
  size_t size() const { return records_.size(); }

 private:
  void forget(std::list<std::pair<std::string, EvalRecord>>::iterator it);

  const size_t max_records_;
  const size_t max_bytes_;
  size_t bytes_ = 0;
  std::list<std::pair<std::string, EvalRecord>> records_;  // most recent first
  std::unordered_map<std::string, std::list<std::pair<std::string, EvalRecord>>::iterator> index_;
};

}  // namespace kbrl::serving

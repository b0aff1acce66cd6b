#include "recent_records.h"

namespace kbrl::serving {

void RecentRecords::remember(const std::string& key, const EvalRecord& record) {
  if (max_records_ == 0) return;
  if (auto it = index_.find(key); it != index_.end()) forget(it->second);
  const size_t bytes = approximate_bytes(record) + key.size();
  if (bytes > max_bytes_) return;
  records_.emplace_front(key, record);
  index_[key] = records_.begin();
  bytes_ += bytes;
  while (records_.size() > max_records_ || bytes_ > max_bytes_) forget(std::prev(records_.end()));
}

std::optional<EvalRecord> RecentRecords::find(const std::string& key) const {
  auto it = index_.find(key);
  if (it == index_.end()) return std::nullopt;
  return it->second->second;
}

void RecentRecords::forget(std::list<std::pair<std::string, EvalRecord>>::iterator it) {
  bytes_ -= approximate_bytes(it->second) + it->first.size();
  index_.erase(it->first);
  records_.erase(it);
}

}  // namespace kbrl::serving

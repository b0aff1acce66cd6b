#pragma once
// The scheduler's batching rule, on its own so that it can be tested: items are taken one per
// client in turn, starting after the client served last, and at most `per_client` items of one
// client go into one batch (so one client's compiles in flight on a GPU are bounded, whoever else
// is queued).
#include <cstddef>
#include <deque>
#include <map>
#include <string>
#include <vector>

namespace kbrl::serving {

/// Moves up to `batch` entries out of `queues` (by client; emptied queues are erased), updating
/// `queued` (the entries left in all queues) and `next_client` (the round-robin position).
template <class Entry>
std::vector<Entry> take_fair_batch(std::map<std::string, std::deque<Entry>>& queues, std::string& next_client,
                                   size_t& queued, size_t batch, size_t per_client) {
  std::vector<Entry> out;
  std::map<std::string, size_t> taken;
  while (out.size() < batch && queued > 0) {
    auto it = queues.upper_bound(next_client);
    size_t capped = 0;  // clients passed over because they are at per_client
    for (;;) {
      if (it == queues.end()) it = queues.begin();
      if (it->second.empty()) {
        it = queues.erase(it);
      } else if (taken[it->first] >= per_client) {
        if (++capped >= queues.size()) return out;  // every client with items is at its cap
        ++it;
      } else {
        break;
      }
    }
    out.push_back(std::move(it->second.front()));
    it->second.pop_front();
    --queued;
    ++taken[it->first];
    next_client = it->first;
    if (it->second.empty()) queues.erase(it);
  }
  return out;
}

}  // namespace kbrl::serving

#include "connection_limits.h"

#include <algorithm>

namespace kbrl::serving {

ConnectionCounter::Ticket::Ticket(ConnectionCounter& counter, std::string peer, Slot slot)
    : counter_(counter), peer_(std::move(peer)), slot_(slot) {}

ConnectionCounter::Ticket::~Ticket() { counter_.release(peer_, slot_); }

std::unique_ptr<ConnectionCounter::Ticket> ConnectionCounter::admit(const std::string& peer) {
  std::lock_guard lock(mutex_);
  Counts& mine = peers_[peer];
  Slot slot;
  if (total_.regular < limits_.max_connections && mine.regular < limits_.per_peer) {
    slot = Slot::regular;
    ++mine.regular;
    ++total_.regular;
  } else if (total_.reserve < limits_.reserve && mine.reserve < std::max<size_t>(1, limits_.reserve / 4)) {
    slot = Slot::reserve;
    ++mine.reserve;
    ++total_.reserve;
  } else {
    if (mine.regular == 0 && mine.reserve == 0) peers_.erase(peer);
    return nullptr;
  }
  return std::make_unique<Ticket>(*this, peer, slot);
}

void ConnectionCounter::release(const std::string& peer, Slot slot) {
  std::lock_guard lock(mutex_);
  auto it = peers_.find(peer);
  if (it == peers_.end()) return;
  size_t& mine = slot == Slot::regular ? it->second.regular : it->second.reserve;
  size_t& all = slot == Slot::regular ? total_.regular : total_.reserve;
  if (mine > 0) --mine;
  if (all > 0) --all;
  if (it->second.regular == 0 && it->second.reserve == 0) peers_.erase(it);
}

size_t ConnectionCounter::open() const {
  std::lock_guard lock(mutex_);
  return total_.regular + total_.reserve;
}

}  // namespace kbrl::serving

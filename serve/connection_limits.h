#pragma once
// How many connections `kbrl serve` holds open, counted before any byte of a request is read: at
// most `max_connections` in all and `per_peer` from one address; past either, a connection may
// still take one of `reserve` further slots (at most a quarter of them, and at least one, per
// address), where only /healthz and requests bearing the server's token are answered (others get
// 503 too_many_connections) and an idle connection is closed soon. So idle connections from one
// client cannot lock out health checks and authenticated clients.
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace kbrl::serving {

struct ConnectionLimits {
  size_t max_connections = 1024;
  size_t per_peer = 256;
  size_t reserve = 64;
};

class ConnectionCounter {
 public:
  enum class Slot { regular, reserve };

  /// A connection's slot, given back when destroyed.
  class Ticket {
   public:
    Ticket(ConnectionCounter& counter, std::string peer, Slot slot);
    ~Ticket();
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    Slot slot() const { return slot_; }

   private:
    ConnectionCounter& counter_;
    std::string peer_;
    Slot slot_;
  };

  explicit ConnectionCounter(ConnectionLimits limits) : limits_(limits) {}
  /// A slot for a new connection from `peer`, or null when there is none (close it at once).
  std::unique_ptr<Ticket> admit(const std::string& peer);
  size_t open() const;  // connections holding a slot

 private:
  struct Counts {
    size_t regular = 0;
    size_t reserve = 0;
  };
  void release(const std::string& peer, Slot slot);

  const ConnectionLimits limits_;
  mutable std::mutex mutex_;
  Counts total_;
  std::map<std::string, Counts> peers_;
};

}  // namespace kbrl::serving

#pragma once
// Shared by the endpoint tests (test_endpoint_policy.cpp, test_endpoint_spec.cpp).
#include <iostream>
#include <string>

#include <gtest/gtest.h>

namespace kbrl::testing {

// The message of the E that f() throws (printed: the tests' log shows what users would read).
template <class E, class F>
inline std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    std::cout << "[ message ] " << e.what() << "\n";
    return e.what();
  }
  ADD_FAILURE() << "expected an exception";
  return "";
}

inline bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace kbrl::testing

#pragma once
// Text assertions for tests (GoogleTest alone is a build dependency, so no gmock matchers):
// EXPECT_TRUE(contains(message, "part")), EXPECT_TRUE(starts_with(text, "prefix")).
#include <string>

#include <gtest/gtest.h>

namespace kbrl::testing {

inline ::testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << text << "' does not contain '" << part << "'";
}

inline ::testing::AssertionResult starts_with(const std::string& text, const std::string& part) {
  if (text.rfind(part, 0) == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << text.substr(0, 200) << "' does not start with '" << part << "'";
}

}  // namespace kbrl::testing

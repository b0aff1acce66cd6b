// Knob spaces: enumeration under constraints, masks for autoregressive sampling, tokens, Config
// text. Hand-built spaces whose legal sets are known.
#include <gtest/gtest.h>

#include <kbrl/error.h>
#include <kernels/knob_space.h>

namespace kbrl {
namespace {

// a in {1,2,3}, b in {x,y}, c in {1,2}; a + c <= 4; b=y only with a=1.
KnobSpace small_space() {
  KnobSpace s;
  s.add_knob({"a", {"1", "2", "3"}, "first"})
      .add_knob({"b", {"x", "y"}, "second"})
      .add_knob({"c", {"1", "2"}, "third"});
  s.add_constraint({"a + c <= 4", {"a", "c"},
                    [](const Config& k) { return k.integer("a") + k.integer("c") <= 4; }});
  s.add_constraint({"b=y only with a=1", {"a", "b"},
                    [](const Config& k) { return k.at("b") == "x" || k.at("a") == "1"; }});
  return s;
}

// p in {0,1}, q in {0,1}; q must be 1, and p=1 forbids q=1: p=1 is a dead end at decision 0.
KnobSpace dead_end_space() {
  KnobSpace s;
  s.add_knob({"p", {"0", "1"}, ""}).add_knob({"q", {"0", "1"}, ""});
  s.add_constraint({"q=1", {"q"}, [](const Config& k) { return k.at("q") == "1"; }});
  s.add_constraint({"p=1 forbids q=1", {"p", "q"},
                    [](const Config& k) { return k.at("p") == "0" || k.at("q") == "0"; }});
  return s;
}

// Every token tuple of the full product, in lexicographic order.
std::vector<std::vector<int>> product(const KnobSpace& s) {
  std::vector<std::vector<int>> out{{}};
  for (const auto& k : s.knobs()) {
    std::vector<std::vector<int>> next;
    for (const auto& prefix : out)
      for (size_t v = 0; v < k.values.size(); ++v) {
        next.push_back(prefix);
        next.back().push_back(static_cast<int>(v));
      }
    out = std::move(next);
  }
  return out;
}

Config config_of(const KnobSpace& s, const std::vector<int>& tokens) {
  Config c;
  for (size_t i = 0; i < tokens.size(); ++i)
    c.set(s.knobs()[i].name, s.knobs()[i].values[static_cast<size_t>(tokens[i])]);
  return c;
}

TEST(KnobSpace, EnumerationMatchesBruteForce) {
  const KnobSpace s = small_space();
  // Legal by hand: (1,x,1) (1,x,2) (1,y,1) (1,y,2) (2,x,1) (2,x,2) (3,x,1).
  EXPECT_EQ(s.size(), 7);
  std::vector<Config> expected;
  for (const auto& t : product(s)) {
    const Config c = config_of(s, t);
    bool ok = true;
    for (const auto& con : s.constraints()) ok = ok && con.allows(c);
    if (ok) expected.push_back(c);
  }
  EXPECT_EQ(s.enumerate(), expected);
  EXPECT_EQ(s.enumerate().front().str(), "a=1,b=x,c=1");
  EXPECT_EQ(s.enumerate().back().str(), "a=3,b=x,c=1");
}

TEST(KnobSpace, UnconstrainedSizeIsTheProduct) {
  KnobSpace s;
  s.add_knob({"block", {"128", "256"}, ""}).add_knob({"vec", {"1", "2", "4"}, ""});
  EXPECT_EQ(s.size(), 6);
}

TEST(KnobSpace, TokensRoundTripForEveryConfig) {
  for (const KnobSpace& s : {small_space(), dead_end_space()}) {
    for (const Config& c : s.enumerate()) {
      const std::vector<int> tokens = s.tokenize(c);
      ASSERT_EQ(tokens.size(), s.knobs().size());
      EXPECT_EQ(s.detokenize(tokens), c);
      EXPECT_EQ(s.parse(c.str()), c);
    }
  }
}

// Following the masks gives exactly the legal configurations: a mask never offers a value that
// has no legal completion, and never hides one that has.
TEST(KnobSpace, MasksAllowExactlyTheLegalConfigs) {
  for (const KnobSpace& s : {small_space(), dead_end_space()}) {
    for (const auto& tokens : product(s)) {
      bool by_masks = true;
      for (size_t i = 0; i < tokens.size() && by_masks; ++i) {
        const std::vector<bool> mask = s.legal_mask(std::span(tokens.data(), i));
        ASSERT_EQ(mask.size(), s.knobs()[i].values.size());
        by_masks = mask[static_cast<size_t>(tokens[i])];
      }
      EXPECT_EQ(by_masks, s.is_legal(config_of(s, tokens))) << config_of(s, tokens).str();
    }
  }
}

TEST(KnobSpace, MaskLooksAheadPastDeadEnds) {
  const KnobSpace s = dead_end_space();
  EXPECT_EQ(s.size(), 1);
  EXPECT_EQ(s.legal_mask({}), (std::vector<bool>{true, false}));
  const std::vector<int> p0{0};
  EXPECT_EQ(s.legal_values(p0), (std::vector<std::string>{"1"}));
  const std::vector<int> p1{1};
  EXPECT_THROW(s.legal_mask(p1), InputError);  // no legal completion
}

TEST(KnobSpace, LegalValuesDependOnEarlierDecisions) {
  const KnobSpace s = small_space();
  EXPECT_EQ(s.legal_values({}), (std::vector<std::string>{"1", "2", "3"}));
  const std::vector<int> a3{2};
  EXPECT_EQ(s.legal_values(a3), (std::vector<std::string>{"x"}));
  const std::vector<int> a3bx{2, 0};
  EXPECT_EQ(s.legal_values(a3bx), (std::vector<std::string>{"1"}));
  const std::vector<int> too_long{0, 0, 0};
  EXPECT_THROW(s.legal_mask(too_long), InputError);
  const std::vector<int> out_of_range{5};
  EXPECT_THROW(s.legal_mask(out_of_range), InputError);
}

TEST(KnobSpace, DetokenizeRejectsBadTokens) {
  const KnobSpace s = small_space();
  const std::vector<int> short_seq{0, 0};
  EXPECT_THROW(s.detokenize(short_seq), InputError);
  const std::vector<int> out_of_range{0, 0, 2};
  EXPECT_THROW(s.detokenize(out_of_range), InputError);
  const std::vector<int> illegal{2, 1, 0};  // a=3,b=y
  EXPECT_THROW(s.detokenize(illegal), InputError);
  EXPECT_THROW(s.tokenize(Config{{"a", "3"}, {"b", "x"}, {"c", "2"}}), InputError);
}

TEST(Config, PrintParseRoundTrip) {
  const Config c{{"block", "256"}, {"vec", "4"}, {"tail", "safe"}};
  EXPECT_EQ(c.str(), "block=256,vec=4,tail=safe");
  EXPECT_EQ(Config::parse(c.str()), c);
  EXPECT_EQ(Config::parse(" block = 256 , vec=4,tail=safe "), c);
  EXPECT_EQ(Config::parse(""), Config{});
  EXPECT_EQ(c.integer("block"), 256);
  EXPECT_THROW(c.integer("tail"), InputError);
  EXPECT_THROW(c.at("grid"), InputError);
}

TEST(Config, ParseErrors) {
  EXPECT_THROW(Config::parse("block"), InputError);
  EXPECT_THROW(Config::parse("=4"), InputError);
  EXPECT_THROW(Config::parse("block="), InputError);
  EXPECT_THROW(Config::parse("block=1,block=2"), InputError);
  EXPECT_THROW(Config::parse("block=1,,vec=2"), InputError);
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no InputError)";
}

TEST(KnobSpace, ParseChecksNamesValuesAndConstraints) {
  const KnobSpace s = small_space();
  EXPECT_EQ(s.parse("c=1,a=2,b=x").str(), "a=2,b=x,c=1");  // put in the space's order
  EXPECT_NE(message_of([&] { s.parse("a=1,b=x,c=1,d=3"); }).find("unknown knob 'd'"),
            std::string::npos);
  EXPECT_NE(message_of([&] { s.parse("a=4,b=x,c=1"); }).find("illegal value '4' for knob 'a'"),
            std::string::npos);
  EXPECT_NE(message_of([&] { s.parse("a=1,b=x"); }).find("knob 'c' is not set"), std::string::npos);
  EXPECT_NE(message_of([&] { s.parse("a=3,b=x,c=2"); }).find("a + c <= 4"), std::string::npos);
  const Config base = s.parse("a=1,b=y,c=2");
  EXPECT_EQ(s.with_overrides(base, Config::parse("c=1")).str(), "a=1,b=y,c=1");
  EXPECT_THROW(s.with_overrides(base, Config::parse("a=2")), InputError);  // b=y needs a=1
  EXPECT_THROW(s.with_overrides(base, Config::parse("z=1")), InputError);
}

TEST(KnobSpace, BuildErrorsAreInternal) {
  KnobSpace s;
  s.add_knob({"a", {"1"}, ""});
  EXPECT_THROW(s.add_knob({"a", {"2"}, ""}), InternalError);
  EXPECT_THROW(s.add_knob({"b", {}, ""}), InternalError);
  EXPECT_THROW(s.add_knob({"c", {"1", "1"}, ""}), InternalError);
  EXPECT_THROW(s.add_knob({"d", {"1,2"}, ""}), InternalError);
  EXPECT_THROW(s.add_constraint({"x", {"zz"}, [](const Config&) { return true; }}), InternalError);
}

TEST(CanonicalKnobs, SharedNamesAreListed) {
  for (const char* name : {"block", "vec", "items_per_thread", "unroll", "tile_m", "tile_n",
                           "tile_k", "stages", "variant", "tensor_core", "precision", "fast_math",
                           "cache_hint", "tail", "grid"})
    EXPECT_TRUE(is_canonical_knob(name)) << name;
  EXPECT_FALSE(is_canonical_knob("blocksize"));
  for (const auto& k : canonical_knobs()) EXPECT_FALSE(k.meaning.empty()) << k.name;
}

}  // namespace
}  // namespace kbrl

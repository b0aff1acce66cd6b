// The endpoint policy's spec (`--policy endpoint:URL,key=value,...`) and its per-sample seeds.
#include <gtest/gtest.h>

#include <string>

#include <kbrl/error.h>
#include <policies/endpoint_policy.h>

#include "endpoint_testing.h"

namespace kbrl {
namespace {

using namespace kbrl::testing;

TEST(EndpointSpec, ParsesEveryKey) {
  const auto o = parse_endpoint_spec(
      "endpoint:http://127.0.0.1:8080/v1,model=qwen,api=completions,server=llamacpp,max_tokens=512,top_p=0.9,"
      "stop=\\n\\n,stop=a\\,b,key_env=MY_KEY,concurrency=3,timeout=12.5,retries=1,style=file,shots=2,system=none,"
      "log=/tmp/x.jsonl");
  EXPECT_EQ(o.url, "http://127.0.0.1:8080/v1");
  EXPECT_EQ(o.model, "qwen");
  EXPECT_EQ(o.api, EndpointApi::completions);
  EXPECT_EQ(o.server, ServerKind::llamacpp);
  EXPECT_EQ(o.max_tokens, 512);
  EXPECT_DOUBLE_EQ(o.top_p, 0.9);
  EXPECT_EQ(o.stop, (std::vector<std::string>{"\n\n", "a,b"}));
  EXPECT_EQ(o.key_env, "MY_KEY");
  EXPECT_EQ(o.http.max_concurrent, 3);
  EXPECT_DOUBLE_EQ(o.http.timeout_seconds, 12.5);
  EXPECT_EQ(o.http.retries, 1);
  EXPECT_EQ(o.prompt.style, TextStyle::file);
  EXPECT_EQ(o.prompt.shots, 2);
  EXPECT_EQ(o.prompt.system, SystemPrompt::none);
  EXPECT_EQ(o.response_log, "/tmp/x.jsonl");
  const auto d = parse_endpoint_spec("endpoint:https://host");
  EXPECT_EQ(d.api, EndpointApi::chat);
  EXPECT_EQ(d.server, ServerKind::auto_detect);
}

TEST(EndpointSpec, BadInputNamesTheKeyAndTheValidKeys) {
  auto msg = message_of<InputError>([] { parse_endpoint_spec("endpoint:http://h:1,modle=x"); });
  EXPECT_TRUE(has(msg, "'modle'")) << msg;
  EXPECT_TRUE(has(msg, "model, api, server, max_tokens")) << msg;
  msg = message_of<InputError>([] { parse_endpoint_spec("endpoint:http://h:1,api=legacy"); });
  EXPECT_TRUE(has(msg, "api=legacy") && has(msg, "chat, completions")) << msg;
  msg = message_of<InputError>([] { parse_endpoint_spec("endpoint:http://h:1,max_tokens=-3"); });
  EXPECT_TRUE(has(msg, "max_tokens=-3")) << msg;
  msg = message_of<InputError>([] { parse_endpoint_spec("endpoint:http://h:1,top_p=1.5"); });
  EXPECT_TRUE(has(msg, "top_p=1.5")) << msg;
  msg = message_of<InputError>([] { parse_endpoint_spec("endpoint:http://h:1,server=tgi"); });
  EXPECT_TRUE(has(msg, "server=tgi") && has(msg, "llamacpp")) << msg;
  msg = message_of<InputError>([] { parse_endpoint_spec("endpoint:http://h:1,shots"); });
  EXPECT_TRUE(has(msg, "'shots' is not key=value") && has(msg, "valid keys")) << msg;
  msg = message_of<InputError>([] { parse_endpoint_spec("endpoint:http://h:1,shots=9"); });
  EXPECT_TRUE(has(msg, "shots=9")) << msg;
  msg = message_of<InputError>([] { parse_endpoint_spec("endpoint:localhost:8080"); });
  EXPECT_TRUE(has(msg, "http://")) << msg;
  msg = message_of<InputError>([] { parse_endpoint_spec("vllm:http://h:1"); });
  EXPECT_TRUE(has(msg, "endpoint:")) << msg;
}

TEST(EndpointSeeds, DependOnSeedAndIndexOnly) {
  std::set<uint32_t> seen;
  for (int i = 0; i < 100; ++i) {
    const uint32_t s = endpoint_sample_seed(7, i);
    EXPECT_EQ(s, endpoint_sample_seed(7, i));
    EXPECT_LT(s, 0x7FFFFFFFu);
    seen.insert(s);
  }
  EXPECT_EQ(seen.size(), 100u);
  EXPECT_NE(endpoint_sample_seed(7, 0), endpoint_sample_seed(8, 0));
}

}  // namespace
}  // namespace kbrl

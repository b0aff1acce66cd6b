"""Runs tinker_env.py through tinker-cookbook 0.6.1's own group rollout against a live `kbrl serve`.

Exit 77 (skipped) when KBRL_SERVE_URL is unset or tinker-cookbook cannot be imported (it lives in its
own virtual environment, made by .ci/setup-serve; ctest/serve/run_in_venv.sh runs this file with
its python). A fake sampler (a `TokenCompleter`) answers task 19 (ReLU) with fixed texts whose tokens
are their UTF-8 bytes - a correct kernel body, one that does not compile, a text with no code, and the
correct body again cut off by the token limit (stop reason `length`) - scored under kbrl's `composite`
reward (0.5 for compiling, so a compile-only server tells them apart):
  1. `do_group_rollout(KbrlGroupBuilder(...), sampler)`, the call the cookbook's RL loop makes for
     each group: four trajectories, the group scored in one POST, the compiling bodies rewarded above
     the others (0.0), the outcome metrics in the group's metrics, the cut-off answer's trajectory
     stopped with `max_tokens` and the others with `completed`;
  2. the same with the cookbook's `TerminationRewardPolicy(zero_reward_on_limit=True)`: the cut-off
     answer's reward clamped to 0, the others unchanged;
  3. `KbrlDatasetBuilder` awaited: a train batch's group builders survive pickling (the cookbook sends
     them to rollout workers) and roll out like the one above.
Exits non-zero on any failure, or, with KBRL_REQUIRE_TINKER=1 (CI), when the cookbook is missing.
"""
from __future__ import annotations

import asyncio
import importlib.metadata
import os
import pickle
import sys

from check_runner import Checks, missing_framework, require_server

HERE = os.path.dirname(os.path.abspath(__file__))
require_server("test_tinker_env")
try:
    from tinker_cookbook.completers import TokenCompleter, TokensWithLogprobs
    from tinker_cookbook.rl.rollout_limits import TerminationRewardPolicy
    from tinker_cookbook.rl.rollouts import do_group_rollout
except ImportError as e:
    missing_framework("test_tinker_env", "tinker-cookbook", e, "KBRL_REQUIRE_TINKER")
sys.path.insert(0, HERE)
import kbrl_client  # noqa: E402
import tinker_env  # noqa: E402
from test_answers import BROKEN, GOOD, NO_CODE, TASK, ByteRenderer  # noqa: E402

ANSWERS = [("good", GOOD, "stop"), ("broken", BROKEN, "stop"), ("no_code", NO_CODE, "stop"),
           ("cut_off", GOOD, "length")]
SETTINGS = {"reward": "composite"}


class FixedSampler(TokenCompleter):
    """Answers the i-th call with ANSWERS[i]; remembers the prompts it was given."""

    def __init__(self):
        self.calls, self.prompts = 0, []

    async def __call__(self, model_input, stop, *, max_tokens=None):
        _, text, reason = ANSWERS[self.calls % len(ANSWERS)]
        self.calls += 1
        self.prompts.append(bytes(model_input.to_ints()).decode("utf-8"))
        tokens = list(text.encode())
        return TokensWithLogprobs(tokens=tokens, maybe_logprobs=[0.0] * len(tokens), stop_reason=reason)


def counting_posts():
    """Replaces kbrl_client.evaluate with one that counts the items of each POST; returns the list."""
    posts, evaluate = [], kbrl_client.evaluate

    def counting(items, *args, **kwargs):
        posts.append(len(items))
        return evaluate(items, *args, **kwargs)

    kbrl_client.evaluate = counting
    return posts, lambda: setattr(kbrl_client, "evaluate", evaluate)


def roll(builder, termination=None):
    posts, restore = counting_posts()
    sampler = FixedSampler()
    try:
        group = asyncio.run(do_group_rollout(builder, sampler, termination=termination))
    finally:
        restore()
    assert sampler.calls == len(ANSWERS), f"{sampler.calls} sampler calls for {len(ANSWERS)} envs"
    assert all("kbrl_forward" in p for p in sampler.prompts), "the sampler was not given kbrl's prompt"
    assert posts == [len(ANSWERS)], f"the group went as {posts} items per POST, not one POST of {len(ANSWERS)}"
    names = [name for name, _, _ in ANSWERS]
    rewards = dict(zip(names, group.get_total_rewards()))
    stops = dict(zip(names, (t.stop_reason for t in group.trajectories_G)))
    return group, rewards, stops


def group_rollout():
    group, rewards, stops = roll(tinker_env.KbrlGroupBuilder(ByteRenderer(), TASK, len(ANSWERS), settings=SETTINGS))
    assert all(type(r) is float for r in rewards.values()), rewards
    assert rewards["broken"] == 0.0 and rewards["no_code"] == 0.0, rewards
    assert rewards["good"] > 0.0 and rewards["cut_off"] == rewards["good"], rewards
    assert stops == {"good": "completed", "broken": "completed", "no_code": "completed", "cut_off": "max_tokens"}, stops
    compiled = [m.get("kbrl/compiled") for m in group.metrics_G]
    assert compiled == [1.0, 0.0, 0.0, 1.0], f"kbrl/compiled per answer: {compiled}"
    return f"one POST of {len(ANSWERS)}; rewards {rewards}; stop reasons {stops}"


def clamped():
    builder = tinker_env.KbrlGroupBuilder(ByteRenderer(), TASK, len(ANSWERS), settings=SETTINGS)
    group, rewards, _ = roll(builder, TerminationRewardPolicy(zero_reward_on_limit=True))
    assert rewards["cut_off"] == 0.0 and rewards["good"] > 0.0, rewards
    assert group.metrics_G[3].get("zero_reward_on_limit") == 1.0, group.metrics_G[3]
    return f"rewards {rewards}: the cut-off answer clamped by the cookbook"


def dataset():
    train, test = asyncio.run(tinker_env.KbrlDatasetBuilder(renderer=ByteRenderer(), batch_size=4, group_size=len(ANSWERS),
                                                            settings=SETTINGS)())
    batch = [pickle.loads(pickle.dumps(b)) for b in train.get_batch(0)]
    assert len(batch) == 4 and all(b.group_size == len(ANSWERS) for b in batch), batch
    relu = [b for i in range(len(train)) for b in train.get_batch(i) if b.task_id == TASK]
    assert relu, "task 19 is not in the train split"
    _, rewards, _ = roll(pickle.loads(pickle.dumps(relu[0])))
    assert rewards["good"] > 0.0 and rewards["broken"] == 0.0, rewards
    try:
        asyncio.run(tinker_env.KbrlDatasetBuilder(batch_size=4)())
        raise AssertionError("a builder with neither a renderer nor a model name was accepted")
    except ValueError as e:
        assert "model_name_for_tokenizer" in str(e), e
    return (f"{len(train)} train batches, {len(test)} eval batches; batch 0 tasks {[b.task_id for b in batch]} "
            f"pickled; task 19's group after pickling: rewards {rewards}")


check = Checks()
print(f"kbrl serve at {os.environ['KBRL_SERVE_URL']}; tinker-cookbook {importlib.metadata.version('tinker-cookbook')}, "
      f"tinker {importlib.metadata.version('tinker')}")
check("do_group_rollout(KbrlGroupBuilder)", group_rollout)
check("TerminationRewardPolicy(zero_reward_on_limit)", clamped)
check("KbrlDatasetBuilder, pickled groups", dataset)
check.finish("tinker_env passed through tinker-cookbook's group rollout")

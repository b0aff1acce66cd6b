"""Runs every example against a live `kbrl serve` at $KBRL_SERVE_URL (exit 77 when it is unset).

For task 19 (ReLU) it scores a correct kernel body, a text with no code (a format_error) and a body
that does not compile, directly and through each framework's interface (tinker-cookbook Env,
verifiers Rubric, TRL reward function, verl compute_score, SkyRL-Gym environment), and checks: one reward per completion,
each a float, and the format error rewarded like the uncompiled candidate (0.0 under the default
speedup reward). Frameworks that are not installed are replaced by stubs/ (an installed one wins).
Exits non-zero on any failure.
"""
from __future__ import annotations

import asyncio
import importlib.util
import os
import sys

from check_runner import Checks, require_server

HERE = os.path.dirname(os.path.abspath(__file__))
require_server("test_examples")
sys.path.insert(0, HERE)
stubbed = [p for p in ("tinker", "tinker_cookbook", "verifiers", "skyrl_gym") if importlib.util.find_spec(p) is None]
sys.path.append(os.path.join(HERE, "stubs"))  # last: an installed package always wins

import kbrl_client  # noqa: E402
import skyrl_env  # noqa: E402
import skyrl_gym  # noqa: E402
import tinker_env  # noqa: E402
import trl_reward  # noqa: E402
import verifiers_rubric  # noqa: E402
import verl_compute_score  # noqa: E402
from test_answers import BROKEN, GOOD, NO_CODE, TASK, ByteRenderer  # noqa: E402

TEXTS = [GOOD, NO_CODE]
check = Checks()


def rewards_ok(rewards, uncompiled: float):
    assert len(rewards) == len(TEXTS), f"{len(rewards)} rewards for {len(TEXTS)} completions"
    assert all(type(r) is float for r in rewards), f"not all floats: {rewards!r}"
    assert uncompiled is not None, "no reward of an uncompiled candidate (kbrl_client.evaluate failed)"
    assert rewards[1] == uncompiled, f"format error got {rewards[1]}, an uncompiled candidate {uncompiled}"
    return f"rewards {rewards} (correct body, no code)"


def direct():
    good, no_code, broken = kbrl_client.evaluate([{"task_id": TASK, "text": t} for t in (GOOD, NO_CODE, BROKEN)])
    assert no_code["outcome"] == "format_error", no_code["outcome"]
    assert broken["outcome"] == "compile_error", broken["outcome"]
    global UNCOMPILED
    UNCOMPILED = kbrl_client.reward_of(broken)
    assert kbrl_client.reward_of(no_code) == UNCOMPILED
    return (f"correct body: {good['outcome']} reward {kbrl_client.reward_of(good)}; no code: format_error reward "
            f"{kbrl_client.reward_of(no_code)}; uncompiled: compile_error reward {UNCOMPILED}"
            + ("" if UNCOMPILED == 0.0 else " (not 0.0: the server's --reward is not speedup?)"))


def bad_item():
    # An item the server cannot read is answered in its place; the batch's other items are evaluated.
    good, bad = kbrl_client.evaluate([{"task_id": TASK, "text": BROKEN}, {"task_id": 999, "text": BROKEN}])
    assert good.get("outcome") == "compile_error", good
    assert bad.get("error", {}).get("field") == "items[1].task_id", bad
    assert kbrl_client.reward_of(bad) == 0.0
    return f"items[1] answered {bad['error']['code']} ({bad['error']['field']}), items[0] {good['outcome']}"


def prompt():
    p = kbrl_client.prompt(TASK)
    assert p["task_id"] == TASK and "kbrl_forward" in p["user"] and p["version"], p.get("version")
    return f"prompt {p['version']}, {len(p['user'])} bytes of user text"


async def tinker_episode():
    """A group's steps, then its rewards (the cookbook's order); the second answer cut off by the limit."""
    builder = tinker_env.KbrlGroupBuilder(ByteRenderer(), TASK, group_size=len(TEXTS))
    envs = await builder.make_envs()
    for env in envs:
        await env.initial_observation()
    stops = [{"stop_reason": "stop"}, {"stop_reason": "length"}]
    results = await asyncio.gather(*(env.step(list(t.encode()), extra=x) for env, t, x in zip(envs, TEXTS, stops)))
    assert all(r.episode_done and r.reward == 0.0 for r in results), results
    marks = [r.metrics for r in results]
    assert marks == [{"stop/completed": 1.0}, {"stop/max_tokens": 1.0}], marks
    scored = await builder.compute_group_rewards([None] * len(envs), envs)
    assert all(set(m) >= {"kbrl/ok", "kbrl/compiled"} for _, m in scored), scored
    return [r for r, _ in scored]


def dataset_builder():
    """The train and eval splits as RLDatasets of groups; a group's envs share one prompt."""
    train, test = asyncio.run(tinker_env.KbrlDatasetBuilder(renderer=ByteRenderer(), batch_size=16, group_size=4)())
    train_ids = [b.task_id for i in range(len(train)) for b in train.get_batch(i)]
    test_ids = [b.task_id for i in range(len(test)) for b in test.get_batch(i)]
    assert train_ids and test_ids and not set(train_ids) & set(test_ids), (train_ids, test_ids)
    assert TASK in train_ids, train_ids
    assert len(train.get_batch(0)) == 16 and train.get_batch(0)[0].group_size == 4
    return f"{len(train_ids)} train tasks in {len(train)} batches, {len(test_ids)} eval tasks in {len(test)}"


def verifiers_rewards():
    func = verifiers_rubric.make_rubric().funcs[0]
    chat = [[{"role": "assistant", "content": t}] for t in TEXTS]
    a = asyncio.run(func(completions=chat, answers=[""] * 2, infos=[{"task_id": TASK}] * 2, states=[{}, {}]))
    b = asyncio.run(func(completions=TEXTS, answers=[str(TASK)] * 2, infos=None))
    return rewards_ok(a, UNCOMPILED) + "; strings: " + rewards_ok(b, UNCOMPILED)


def trl_rewards():
    logged = {}
    a = trl_reward.kbrl_reward(completions=TEXTS, task_id=[TASK] * 2, prompts=["p"] * 2,
                               log_extra=logged.__setitem__, log_metric=logged.__setitem__)
    chat = [[{"role": "assistant", "content": t}] for t in TEXTS]
    b = trl_reward.kbrl_reward(completions=chat, task_id=[TASK] * 2)
    assert logged.get("kbrl_outcome", [None, None])[1] == "format_error", logged
    c = asyncio.run(trl_reward.kbrl_reward_async(completions=TEXTS, task_id=[TASK] * 2))
    return (rewards_ok(a, UNCOMPILED) + "; conversational: " + rewards_ok(b, UNCOMPILED) + "; async: " +
            rewards_ok(c, UNCOMPILED))


def verl_rewards():
    async def scores():
        return await asyncio.gather(*(verl_compute_score.compute_score("kbrl", t, str(TASK), {"task_id": TASK})
                                      for t in TEXTS))
    results = asyncio.run(scores())
    assert all(isinstance(r, dict) and "kbrl_ok" in r for r in results), results
    a = [r["score"] for r in results]
    s = [verl_compute_score.compute_score_sync("kbrl", t, str(TASK), {"task_id": TASK}) for t in TEXTS]
    b = verl_compute_score.compute_score_batch(["kbrl"] * 2, TEXTS, [str(TASK)] * 2, [None, None])
    return (rewards_ok(a, UNCOMPILED) + "; sync: " + rewards_ok(s, UNCOMPILED) + "; batch: " +
            rewards_ok(b, UNCOMPILED))


def skyrl_rewards():
    """Through SkyRL-Gym's own registry: make, init, step, as SkyRL-train's generator drives an env."""
    skyrl_env.register()
    rows = {r["extra_info"]["task_id"]: r for r in skyrl_env.dataset_rows("train")}
    assert TASK in rows and rows[TASK]["env_class"] == "kbrl", sorted(rows)[:5]
    try:
        from omegaconf import OmegaConf  # what SkyRL-train passes; a dict elsewhere
        config = OmegaConf.create({"url": os.environ["KBRL_SERVE_URL"]})
    except ImportError:
        config = {"url": os.environ["KBRL_SERVE_URL"]}
    rewards, outcomes = [], []
    for text in TEXTS:
        env = skyrl_gym.make("kbrl", env_config=config, extras=rows[TASK])
        prompt, _ = env.init(rows[TASK]["prompt"])
        assert prompt and prompt[-1]["role"] == "user", prompt
        out = env.step(text)
        assert out["done"] and out["observations"] == [], out
        rewards.append(out["reward"])
        outcomes.append(out["metadata"]["kbrl_outcome"])
    assert outcomes[1] == "format_error", outcomes
    try:
        skyrl_env.KbrlSkyrlEnv(config, {"extra_info": {}})
        raise AssertionError("a row without a task id was accepted")
    except ValueError as e:
        assert "task_id" in str(e), e
    return rewards_ok(rewards, UNCOMPILED) + f"; {len(rows)} train rows; outcomes {outcomes}"


def async_jobs():
    """The same items as an async job give the same records; a job the client gives up on is deleted."""
    items = [{"task_id": TASK, "text": t} for t in TEXTS]
    sync = kbrl_client.evaluate(items)
    polled = kbrl_client.evaluate(items, use_async=True, poll=0.1)
    assert [r["outcome"] for r in polled] == [r["outcome"] for r in sync], (polled, sync)
    assert [r["key"] for r in polled] == [r["key"] for r in sync]
    try:
        kbrl_client.evaluate([{"task_id": TASK, "text": GOOD.replace("i < y_numel", "i < y_numel && i >= 0")}],
                             use_async=True, timeout=0.0)
        raise AssertionError("no TimeoutError with a timeout of 0")
    except TimeoutError as e:
        gone = str(e)
    job_id = gone.split()[1].rstrip(":")
    try:
        kbrl_client._call("GET", f"/v1/jobs/{job_id}", retries=0)
        raise AssertionError(f"job {job_id} is still there after the client gave up on it")
    except kbrl_client.KbrlError as e:
        assert e.status == 404, e
    return f"async outcomes {[r['outcome'] for r in polled]}; timeout: {gone}"


def trl_grpo_checks():
    """trl_grpo.py's checks before it loads anything: a wrong task id and bad sizes are refused."""
    import subprocess
    script = os.path.join(HERE, "trl_grpo.py")
    unknown = subprocess.run([sys.executable, script, "--model", "m", "--tasks", f"{TASK},9999", "--out", "unused"],
                             capture_output=True, text=True, timeout=120)
    assert unknown.returncode == 1 and "unknown task ids [9999]" in unknown.stderr, unknown
    small = subprocess.run([sys.executable, script, "--model", "m", "--group", "1", "--out", "unused"],
                           capture_output=True, text=True, timeout=120)
    assert small.returncode == 2 and "--group >= 2" in small.stderr, small
    assert not os.path.exists("unused")
    return "unknown task and --group 1 refused"


UNCOMPILED = None
print(f"kbrl serve at {os.environ['KBRL_SERVE_URL']}; stubs for: {', '.join(stubbed) or 'none'}")
check("kbrl_client.evaluate", direct)
check("kbrl_client.evaluate, a bad item", bad_item)
check("kbrl_client.prompt", prompt)
check("kbrl_client async jobs", async_jobs)
check("tinker_env.KbrlEnv", lambda: rewards_ok(asyncio.run(tinker_episode()), UNCOMPILED))
check("tinker_env.KbrlDatasetBuilder", dataset_builder)
check("verifiers_rubric", verifiers_rewards)
check("trl_reward.kbrl_reward", trl_rewards)
check("trl_grpo.py (before TRL loads)", trl_grpo_checks)
check("verl_compute_score", verl_rewards)
check("skyrl_env.KbrlSkyrlEnv", skyrl_rewards)
check.finish("all examples passed")

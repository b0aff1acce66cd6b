"""Runs verifiers_env.py through verifiers 0.4's own code against a live `kbrl serve` at $KBRL_SERVE_URL.

Exit 77 (skipped) when KBRL_SERVE_URL is unset or `verifiers.v1` cannot be imported (verifiers 0.4
lives in its own virtual environment, made by .ci/setup-serve; ctest/serve/run_in_venv.sh runs
this file with its python). The rollouts of task 19 (ReLU) are fixed texts - a correct kernel body,
one that does not compile and a text with no code - scored under kbrl's `composite` reward (0.5 for
compiling, so a compile-only server tells them apart):
  1. the environment loads through verifiers' loader by its id, as vf-eval and prime-rl load it
     (from a dict, as the CLI and the env-server wire pass it) and through load_environment(**kwargs);
  2. `Task.score(trace)`, the call a rollout makes when it closes, for three rollouts of a group at
     once (Traces holding the texts as the model's replies): one POST, the compiling body rewarded
     above the others (0.0);
  3. the CLIs without a model: `vf-eval verifiers_env --dry-run` writes the run's config, then
     `vf-replay` (verifiers' offline re-scoring of a run's saved traces) scores saved rollouts: the
     same rewards, one POST;
  4. a server that is down: the reward raises a TaskError naming the URL; `vf-replay` records it on
     each trace (not ok, the reward unscored: 0.0), as a rollout does;
  5. `vf-eval` itself with a fake OpenAI-compatible model that answers the correct body, then the
     broken one: two rollouts in verifiers' null harness (its chat program, whose dependencies uv
     resolves against PyPI at each run, cached under $KBRL_SERVE_HOME/vf-eval-home), rewarded 0.5
     (or more) and 0.0; reported skipped where PyPI cannot be reached.
Exits non-zero on any failure, or, with KBRL_REQUIRE_VERIFIERS=1 (CI), on any skip too.
"""
from __future__ import annotations

import asyncio
import http.server
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from check_runner import Checks, Skipped, missing_framework, require_server

HERE = os.path.dirname(os.path.abspath(__file__))
require_server("test_verifiers_env")
try:
    import verifiers
    import verifiers.v1 as vf
    from verifiers.v1.graph import MessageNode
except ImportError as e:
    missing_framework("test_verifiers_env", "verifiers 0.4 (verifiers.v1)", e, "KBRL_REQUIRE_VERIFIERS")
sys.path.insert(0, HERE)
import kbrl_client  # noqa: E402
import verifiers_env  # noqa: E402
from test_answers import BROKEN, GOOD, NO_CODE, TASK  # noqa: E402

GROUP = {"good": GOOD, "broken": BROKEN, "no_code": NO_CODE}
BIN = os.path.dirname(sys.executable)  # vf-eval and vf-replay are the venv's console scripts
check = Checks(required=os.environ.get("KBRL_REQUIRE_VERIFIERS") == "1")  # CI: nothing may be skipped


def rollout(task: vf.Task, text: str) -> vf.Trace:
    """A finished single-turn rollout of `task` whose model reply is `text`, as a rollout builds its
    trace (verifiers/v1/rollout.py): the prompt as a user node, the reply as a sampled assistant node."""
    return vf.Trace(
        task=vf.TraceTask(type=type(task).__name__, data=task.data, key=task.key, hash=task.hash),
        agent=vf.AgentInfo(config=vf.AgentConfig()),
        nodes=[MessageNode(message=vf.UserMessage(content=task.data.prompt)),
               MessageNode(parent=0, message=vf.AssistantMessage(content=text), sampled=True)],
        is_completed=True, ok=True, stop_condition="agent_completed")


def expect_rewards(rewards: dict, outcomes: dict, compiled: dict):
    assert outcomes == {"good": outcomes["good"], "broken": "compile_error", "no_code": "format_error"}, outcomes
    assert outcomes["good"] not in ("compile_error", "format_error"), outcomes
    assert compiled == {"good": 1.0, "broken": 0.0, "no_code": 0.0}, compiled
    assert all(type(r) is float for r in rewards.values()), rewards
    assert rewards["broken"] == 0.0 and rewards["no_code"] == 0.0, rewards
    assert rewards["good"] > rewards["broken"], f"the compiling body is not rewarded above the others: {rewards}"
    return f"rewards {rewards}, outcomes {outcomes}"


def load():
    env = verifiers_env.load_environment(task_ids=[TASK], reward="composite")
    assert isinstance(env, vf.SingleAgentEnv), type(env)
    assert isinstance(env._harnesses["agent"], verifiers_env.NullHarness), env._harnesses
    # The dict form vf-eval's flags and prime-rl's env servers hand to the same loader.
    config = vf.resolve_env_config({"taskset": {"id": "verifiers_env", "task_ids": [TASK], "task": {"reward": "composite"}}})
    again = vf.load_environment(config)
    assert type(again.taskset) is verifiers_env.KbrlTaskset and type(config.taskset) is verifiers_env.KbrlTasksetConfig
    tasks = list(env.taskset)
    assert [t.data.task_id for t in tasks] == [TASK] and isinstance(tasks[0], verifiers_env.KbrlTask), tasks
    assert "kbrl_forward" in tasks[0].data.prompt and tasks[0].data.prompt_version, tasks[0].data
    global TASK_OBJ
    TASK_OBJ = tasks[0]
    split = list(vf.load_environment(vf.resolve_env_config({"taskset": {"id": "verifiers_env", "split": "eval"}}))
                 .taskset.take(2))
    assert len(split) == 2 and all(t.data.task_id != TASK for t in split), [t.data.task_id for t in split]
    return (f"{type(env).__name__} with harness {type(env._harnesses['agent']).__name__}; task {tasks[0].data.name} "
            f"(key {tasks[0].key}); eval split starts {[t.data.name for t in split]}")


def score_group():
    posts = []
    evaluate = kbrl_client.evaluate

    def counting(items, *args, **kwargs):
        posts.append(len(items))
        return evaluate(items, *args, **kwargs)

    traces = {name: rollout(TASK_OBJ, text) for name, text in GROUP.items()}

    async def group():
        await asyncio.gather(*(TASK_OBJ.score(t) for t in traces.values()))

    kbrl_client.evaluate = counting
    try:
        asyncio.run(group())
    finally:
        kbrl_client.evaluate = evaluate
    assert posts == [3], f"the group went as {posts} items per POST, not one POST of 3"
    assert all(t.info["kbrl"]["batch"] == 3 for t in traces.values()), [t.info for t in traces.values()]
    assert all(set(t.rewards) == {"kbrl"} for t in traces.values()), [t.rewards for t in traces.values()]
    return "one POST of 3; " + expect_rewards({n: t.reward for n, t in traces.items()},
                                              {n: t.info["kbrl"]["outcome"] for n, t in traces.items()},
                                              {n: t.metrics["kbrl_compiled"] for n, t in traces.items()})


def cli(*args: str, url: str | None = None, timeout: float = 300, extra_env: dict | None = None):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [HERE, os.environ.get("PYTHONPATH")])),
           **(extra_env or {})}
    if url:
        env["KBRL_SERVE_URL"] = url
    done = subprocess.run([os.path.join(BIN, args[0]), *args[1:]], env=env, capture_output=True, text=True,
                          timeout=timeout)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(args)} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done


def saved_run(root: Path, *flags: str) -> tuple[Path, dict]:
    """A run directory as vf-eval leaves it: its resolved config (from `vf-eval --dry-run`, the flags of
    examples/README.md) and traces.jsonl holding one episode per rollout."""
    cli("vf-eval", "verifiers_env", "--dry-run", "--no-push", "-o", str(root), "--run.name", "src", "-r", "3",
        "--env.taskset.task-ids", f"[{TASK}]", "--env.taskset.task.reward", "composite",
        "--env.agent.runtime.type", "subprocess", *flags)
    run = root / "src"
    config = json.loads((run / "configs" / "resolved" / "eval.json").read_text())
    assert config["env"]["taskset"]["id"] == "verifiers_env", config["env"]
    assert config["env"]["taskset"]["task"]["reward"] == "composite", config["env"]["taskset"]
    from verifiers.v1.utils.trace_store import write_episode
    ids = {}
    for name, text in GROUP.items():
        trace = rollout(TASK_OBJ, text)
        ids[trace.id] = name
        write_episode(run, vf.Episode(env=vf.EnvInfo(id="verifiers_env"), task=trace.task, traces=[trace], ok=True))
    return run, ids


def replayed(out: Path, ids: dict) -> dict:
    traces = {}
    for line in (out / "traces.jsonl").read_text().splitlines():
        for trace in json.loads(line)["traces"]:
            traces[ids[trace["id"]]] = trace
    assert set(traces) == set(GROUP), sorted(traces)
    return traces


def replay():
    with tempfile.TemporaryDirectory() as tmp:
        run, ids = saved_run(Path(tmp))
        start = time.monotonic()
        cli("vf-replay", str(run), "--no-rich", "-o", str(Path(tmp) / "replay"))
        took = time.monotonic() - start
        traces = replayed(Path(tmp) / "replay", ids)
    assert all(t["ok"] and not t.get("errors") for t in traces.values()), traces
    assert [t["info"]["kbrl"]["batch"] for t in traces.values()] == [3, 3, 3], "vf-replay's 3 re-scorings not in one POST"
    rewards = {n: sum(r["score"] * r["weight"] for r in t["rewards"].values()) for n, t in traces.items()}
    return f"vf-replay in {took:.1f} s, one POST of 3: " + expect_rewards(
        rewards, {n: t["info"]["kbrl"]["outcome"] for n, t in traces.items()},
        {n: t["metrics"]["kbrl_compiled"] for n, t in traces.items()})


class FakeModel(http.server.BaseHTTPRequestHandler):
    """An OpenAI-compatible chat endpoint answering, in turn, each text of `replies` (streamed when asked)."""

    replies: list[str] = []
    served: list[int] = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        text = self.replies[len(self.served) % len(self.replies)]
        self.served.append(len(body.get("messages", [])))
        head = {"id": f"fake-{len(self.served)}", "created": int(time.time()), "model": body.get("model", "fake")}
        usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
        if body.get("stream"):
            events = [{**head, "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": d, "finish_reason": f}]}
                      for d, f in (({"role": "assistant", "content": text}, None), ({}, "stop"))]
            events.append({**head, "object": "chat.completion.chunk", "choices": [], "usage": usage})
            out = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"
            kind = "text/event-stream"
        else:
            out = json.dumps({**head, "object": "chat.completion", "usage": usage, "choices": [
                {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}]}).encode()
            kind = "application/json"
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


def vf_eval():
    """`vf-eval` itself: two rollouts of task 19 by a fake model (one answers GOOD, one BROKEN), each in
    verifiers' null harness (its chat program, run by uv in a subprocess runtime) through verifiers'
    interception, scored when they close. The chat program's dependencies come from PyPI through uv
    once, cached under $KBRL_SERVE_HOME/vf-eval-home (HOME for the run: nothing lands in the real one)."""
    FakeModel.replies, FakeModel.served = [GOOD, BROKEN], []
    model = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeModel)
    threading.Thread(target=model.serve_forever, daemon=True).start()
    home = Path(os.environ.get("KBRL_SERVE_HOME") or Path.home() / ".cache/kbrl/serve") / "vf-eval-home"
    home.mkdir(parents=True, exist_ok=True)
    env = {"HOME": str(home), "PATH": BIN + os.pathsep + os.environ.get("PATH", ""), "FAKE_MODEL_KEY": "none"}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            start = time.monotonic()
            cli("vf-eval", "verifiers_env", "-n", "1", "-r", "2", "--env.taskset.task-ids", f"[{TASK}]",
                "--env.taskset.task.reward", "composite", "--env.agent.runtime.type", "subprocess",
                "--model", "fake", "--client.base-url", f"http://127.0.0.1:{model.server_address[1]}/v1",
                "--client.api-key-var", "FAKE_MODEL_KEY", "--no-push", "--no-rich", "-o", tmp, "--run.name", "e2e",
                extra_env=env, timeout=600)
            took = time.monotonic() - start
            traces = [t for line in (Path(tmp) / "e2e" / "traces.jsonl").read_text().splitlines()
                      for t in json.loads(line)["traces"]]
    finally:
        model.shutdown()
    setup = [e["message"] for t in traces for e in t.get("errors", []) if "failed to prepare uv script" in e["message"]]
    if setup and not FakeModel.served:
        raise Skipped("verifiers' chat harness was not set up: uv fetches its dependencies from PyPI at every "
                      f"run ({setup[0].splitlines()[0]} ... {setup[0].splitlines()[-1].strip()})")
    assert all(t["ok"] and not t.get("errors") for t in traces), [t.get("errors") for t in traces]
    assert len(FakeModel.served) == 2 and len(traces) == 2, (FakeModel.served, len(traces))
    bad, good = sorted(traces, key=lambda t: t["info"]["kbrl"]["outcome"] != "compile_error")
    assert bad["info"]["kbrl"]["outcome"] == "compile_error", [t["info"]["kbrl"] for t in traces]
    assert good["info"]["kbrl"]["outcome"] not in ("compile_error", "format_error"), good["info"]["kbrl"]
    assert good["metrics"]["kbrl_compiled"] == 1.0 and good["rewards"]["kbrl"]["score"] > 0.0, good["rewards"]
    assert bad["rewards"]["kbrl"]["score"] == 0.0, bad["rewards"]
    batches = sorted(t["info"]["kbrl"]["batch"] for t in traces)
    return (f"vf-eval in {took:.1f} s: 2 rollouts ({good['info']['kbrl']['outcome']} reward "
            f"{good['rewards']['kbrl']['score']}, compile_error reward 0.0); requests of {batches} items")


def dead_url() -> str:
    with socket.socket() as s:  # a port that was free a moment ago: connections are refused
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def server_down():
    url = dead_url()
    task = next(iter(verifiers_env.load_environment(task_ids=[TASK], url=os.environ["KBRL_SERVE_URL"]).taskset))
    down = task.with_data()
    down.config = task.config.model_copy(update={"url": url, "retries": 0})
    trace = rollout(down, GOOD)
    try:
        asyncio.run(down.score(trace))
        raise AssertionError("scoring against a server that is down did not fail")
    except vf.TaskError as e:
        message = str(e)
    assert url in message and "did not answer" in message, message
    assert trace.rewards.get("kbrl", "missing") is None and trace.reward == 0.0, trace.rewards
    # vf-replay, as a rollout does, records the error on the trace (the run saved with no retries).
    with tempfile.TemporaryDirectory() as tmp:
        run, ids = saved_run(Path(tmp), "--env.taskset.task.retries", "0")
        cli("vf-replay", str(run), "--no-rich", "-o", str(Path(tmp) / "replay"), url=url)
        traces = replayed(Path(tmp) / "replay", ids)
    for t in traces.values():
        assert not t["ok"] and [e["type"] for e in t["errors"]] == ["TaskError"], t
        assert url in t["errors"][0]["message"] and t["rewards"] == {"kbrl": None}, t
    return f"{message}; vf-replay: the 3 traces not ok, a TaskError each, reward unscored"


TASK_OBJ = None
print(f"kbrl serve at {os.environ['KBRL_SERVE_URL']}; verifiers {verifiers.__version__} ({sys.executable})", flush=True)
check("load_environment", load)
if TASK_OBJ is not None:
    check("Task.score, a group at once", score_group)
    check("vf-eval --dry-run, then vf-replay", replay)
    check("a server that is down", server_down)
    check("vf-eval, two rollouts of a fake model", vf_eval)
check.finish("all verifiers 0.4 checks passed")

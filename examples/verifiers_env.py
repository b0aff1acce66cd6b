"""A verifiers 0.4 (`verifiers.v1`) environment whose reward is kbrl's.

verifiers 0.4 keeps only the v1 stack (`import verifiers.v1 as vf`; for verifiers <= 0.3 see
verifiers_rubric.py). There an environment is a taskset plugin: an importable module whose
`__all__` exports one `vf.Taskset` subclass; `vf-eval <module>`, `vf-replay` and prime-rl load it
by that id through `vf.load_environment(EnvConfig)`, which imports the module, builds the
taskset from its `TasksetConfig` subclass (flags `--env.taskset.*`) and wraps it in an `Env`
(`SingleAgentEnv`: one model seat). Each rollout is scored when it closes by `Task.score(trace)`,
which calls the task's `@vf.reward` methods with the arguments they name (`trace`, `task`) and
records their weighted sum as the trace's reward; a group (`-r N`) is N independent episodes.

Here one task is one kbrl task: the prompt is kbrl's (GET /v1/tasks/{id}/prompt) and the reward
`kbrl` sends the rollout's last reply to POST /v1/evaluate. Rewards awaited within `batch_window`
seconds of each other (a group's rollouts finishing together, a `vf-replay` re-scoring a run) go
as one request. A failed candidate is data (reward 0.0 under the default `speedup` reward); a
server that cannot be reached (kbrl_client retries refused connections for about 2 minutes, so a
restart passes unnoticed) is an error: the reward raises, verifiers records a TaskError on the
trace (`ok` false, the reward unscored, so `trace.reward` is 0.0), and `--env.agent.retries` can
rerun such a rollout. The module also exports `KbrlHarness`, the built-in `null` harness (a chat
loop with no tools), as this taskset's default seat.

    PYTHONPATH=examples KBRL_SERVE_URL=http://127.0.0.1:8750 vf-eval verifiers_env -n 4 -r 8 \\
        --env.taskset.split eval --env.agent.runtime.type subprocess --model ... --no-push

or from Python, `load_environment(task_ids=[19, 20], url=..., reward="composite")` (see its
docstring). The server is `url`, else $KBRL_SERVE_URL (default http://127.0.0.1:8750); the token
is `token`, else $KBRL_SERVE_TOKEN, and is never written into a saved config. Read from verifiers
0.4.0 (verifiers/v1/task.py, taskset.py, utils/loaders.py, utils/decorators.py, cli/replay.py).
"""
from __future__ import annotations

import asyncio
import os
import sys
import urllib.error
import weakref

from pydantic import Field

import verifiers.v1 as vf
from verifiers.v1.harnesses.null.harness import NullHarness

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kbrl_client  # noqa: E402

TASKSET_ID = __name__  # the id vf-eval and vf.load_environment import this module by
__all__ = ["KbrlTaskset", "KbrlHarness"]


class KbrlData(vf.TaskData):
    """One kbrl task: its id and the version of the prompt the model saw."""

    task_id: int
    prompt_version: str = ""


class KbrlTaskConfig(vf.TaskConfig):
    """How the reward reaches kbrl serve (`--env.taskset.task.*`)."""

    url: str | None = None
    """kbrl serve's URL; None: $KBRL_SERVE_URL, else http://127.0.0.1:8750."""
    token: str | None = Field(None, exclude=True, repr=False)
    """Bearer token; None: $KBRL_SERVE_TOKEN. Never serialized (saved configs, env-server wire)."""
    reward: str | None = None
    """The item's reward (speedup, composite[:a,b,g,r], normalized, threshold:T); None: the server's."""
    mode: str | None = None
    """Timing mode (fast, full, adaptive); None: the server's."""
    tolerance: str | None = None
    """strict or legacy; None: the server's."""
    inputs: str | None = None
    """robust or kernelbench; None: the server's."""
    batch_window: float = Field(0.05, ge=0)
    """Seconds a reward waits for others to share its request."""
    retries: int = Field(8, ge=0)
    """kbrl_client's retries of refused connections and retryable errors (about 2 minutes at 8)."""
    timeout: float = Field(kbrl_client.SERVER_WAIT + 60, gt=0)
    """Seconds one request may wait in all (kbrl_client.evaluate's timeout)."""


class _Batcher:
    """Collects the items of rewards awaited within `batch_window` seconds into one request."""

    def __init__(self, config: KbrlTaskConfig):
        self.config, self.pending, self.flushing = config, [], set()

    async def score(self, item: dict) -> tuple[dict, int]:
        """The item's record and the number of items its request held."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self.pending.append((item, future))
        if len(self.pending) == 1:
            loop.call_later(self.config.batch_window, self._start_flush)
        return await future

    def _start_flush(self):
        task = asyncio.ensure_future(self._flush())
        self.flushing.add(task)  # held until done: the loop keeps only a weak reference
        task.add_done_callback(self.flushing.discard)

    async def _flush(self):
        batch, self.pending = self.pending, []
        c = self.config
        try:
            records = await asyncio.to_thread(kbrl_client.evaluate, [i for i, _ in batch], c.url, c.token,
                                              c.timeout, c.retries)
        except Exception as e:  # noqa: BLE001 - every waiter sees the failure
            if isinstance(e, (urllib.error.URLError, ConnectionError)):  # refused, reset, no such host
                url = c.url or os.environ.get("KBRL_SERVE_URL") or kbrl_client.DEFAULT_URL
                cause, e = e, ConnectionError(f"kbrl serve at {url} did not answer ({e}); is it running? "
                                              "(the url comes from the task config, else $KBRL_SERVE_URL)")
                e.__cause__ = cause
            for _, future in batch:
                if not future.done():
                    future.set_exception(e)
            return
        for (_, future), record in zip(batch, records):
            if not future.done():
                future.set_result((record, len(batch)))


_batchers: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # event loop -> {settings: _Batcher}


def _batcher(config: KbrlTaskConfig) -> _Batcher:
    per_loop = _batchers.setdefault(asyncio.get_running_loop(), {})
    key = (config.url, config.token, config.batch_window, config.retries, config.timeout)
    if key not in per_loop:
        per_loop[key] = _Batcher(config)
    return per_loop[key]


class KbrlTask(vf.Task[KbrlData, vf.State, KbrlTaskConfig]):
    """One answer to one kbrl task, scored by kbrl serve."""

    @property
    def key(self) -> str:
        """Durable identity (the default hashes the data, run-local `idx` included)."""
        return f"{self.data.task_id}:{self.data.prompt_version}"

    @vf.reward
    async def kbrl(self, trace: vf.Trace) -> float:
        """kbrl's reward for the rollout's last reply. The record's outcome, detail, speedup and key, and
        the number of items its request held (`batch`), go to `trace.info["kbrl"]`; the metrics are
        kbrl_ok, kbrl_compiled and kbrl_format_error."""
        c = self.config
        item = {"task_id": self.data.task_id, "text": trace.last_reply}
        item.update({k: v for k in ("reward", "mode", "tolerance", "inputs") if (v := getattr(c, k)) is not None})
        record, batch = await _batcher(c).score(item)
        outcome = record.get("outcome", "")
        trace.info["kbrl"] = {"outcome": outcome, "detail": str(record.get("outcome_detail", ""))[:2000],
                              "speedup": record.get("speedup"), "key": record.get("key", ""), "batch": batch}
        trace.record_metrics(kbrl_client.outcome_metrics(record))
        return kbrl_client.reward_of(record)


class KbrlTasksetConfig(vf.TasksetConfig):
    """Which kbrl tasks load (`--env.taskset.*`)."""

    task_ids: list[int] | None = None
    """These tasks, in this order; None: every task of `split`."""
    split: str | None = "train"
    """A split of GET /v1/tasks (train, eval, ...; None: all) when `task_ids` is unset."""
    style: str = "body"
    """kbrl's prompt style: body (a kernel body) or file (a whole .cu file)."""
    task: KbrlTaskConfig = KbrlTaskConfig()


class KbrlTaskset(vf.Taskset[KbrlTask, KbrlTasksetConfig]):
    """kbrl's tasks, each prompted with kbrl's prompt (fetched as the taskset is iterated)."""

    def load(self):
        c, t = self.config, self.config.task
        listed = kbrl_client.tasks(t.url, t.token, None if c.task_ids else c.split)
        names = {int(x["id"]): x.get("name", "") for x in listed}
        ids = [int(i) for i in c.task_ids] if c.task_ids else list(names)
        unknown = [i for i in ids if i not in names]
        if unknown:
            raise ValueError(f"kbrl serve has no task {unknown} (GET /v1/tasks lists {len(names)})")
        for task_id in ids:
            p = kbrl_client.prompt(task_id, t.url, c.style, t.token)
            data = KbrlData(id=str(task_id), name=names[task_id], task_id=task_id, prompt=p["user"],
                            system_prompt=p.get("system") or None, prompt_version=p.get("version", ""))
            yield KbrlTask(data, t)


class KbrlHarness(NullHarness):
    """The default seat of this taskset: verifiers' `null` harness (a chat loop, no tools)."""


def load_environment(task_ids=None, split: str | None = "train", style: str = "body", url: str | None = None,
                     token: str | None = None, reward: str | None = None, **env) -> vf.Env:
    """The environment vf-eval runs for `vf-eval verifiers_env --env.taskset.task-ids '[19]' ...`, built
    by verifiers' own loader (`vf.load_environment`). `task_ids` (else the tasks of `split`), the
    server (`url`, `token`, else $KBRL_SERVE_URL, $KBRL_SERVE_TOKEN) and the item `reward` set the
    taskset; other keywords are `SingleAgentEnvConfig` fields (`agent`, `retries`, `timeout`, ...).
    `env.taskset` iterates the `KbrlTask`s; `await task.score(trace)` scores a rollout."""
    task = KbrlTaskConfig(url=url, reward=reward)
    taskset = KbrlTasksetConfig(id=TASKSET_ID, task_ids=task_ids, split=split, style=style, task=task)
    built = vf.load_environment(vf.SingleAgentEnvConfig(taskset=taskset, **env))
    # The config was narrowed through a dump, which leaves the token out: set it on the live one.
    built.taskset.config.task.token = token
    return built

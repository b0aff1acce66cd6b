"""A tinker-cookbook RL environment whose reward is kbrl's.

Implements `tinker_cookbook.rl.types.Env`: `async initial_observation() -> (Observation,
StopCondition)` and `async step(action, *, extra=None) -> StepResult(reward, episode_done,
next_observation, next_stop_condition, metrics)`, where an Action is the sampled token ids and an
Observation a `tinker.ModelInput`; plus an `EnvGroupBuilder` (`async make_envs()`) for GRPO-style
groups. Documented at https://tinker-docs.thinkingmachines.ai/rl/rl-envs and
https://tinker-docs.thinkingmachines.ai/cookbook/api-reference/rl/env (renderers:
https://tinker-docs.thinkingmachines.ai/rendering).

One episode is one answer: the prompt is kbrl's (GET /v1/tasks/{id}/prompt), the renderer decodes
the sampled tokens into a message, and kbrl scores its text. Steps that finish close together are
sent as one POST /v1/evaluate. `KbrlDatasetBuilder(renderer, batch_size, group_size)` is the
cookbook's `RLDatasetBuilder` (awaited, it gives the train split's `RLDataset` and the eval split's):
each batch is `batch_size` tasks, each task a `KbrlGroupBuilder` of `group_size` envs.
"""
from __future__ import annotations

import asyncio
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kbrl_client  # noqa: E402

try:  # guarded: the file imports (and its helpers work) without tinker-cookbook
    import tinker
    from tinker_cookbook import renderers
    from tinker_cookbook.rl.types import Env, EnvGroupBuilder, RLDataset, RLDatasetBuilder, StepResult
except ImportError:
    tinker = renderers = StepResult = None
    Env = EnvGroupBuilder = RLDataset = RLDatasetBuilder = object


class _Batcher:
    """Collects the items of steps that finish within `window` seconds into one request."""

    def __init__(self, url=None, token=None, window=0.05):
        self.url, self.token, self.window, self.pending = url, token, window, []

    async def score(self, item: dict) -> dict:
        future = asyncio.get_running_loop().create_future()
        self.pending.append((item, future))
        if len(self.pending) == 1:
            asyncio.get_running_loop().call_later(self.window, lambda: asyncio.ensure_future(self._flush()))
        return await future

    async def _flush(self):
        batch, self.pending = self.pending, []
        try:
            records = await asyncio.to_thread(kbrl_client.evaluate, [i for i, _ in batch], self.url, self.token)
        except Exception as e:  # noqa: BLE001 - every waiter sees the failure
            for _, future in batch:
                future.set_exception(e)
            return
        for (_, future), record in zip(batch, records):
            future.set_result(record)


_batchers: dict = {}


def _batcher(url, token) -> _Batcher:
    key = (asyncio.get_running_loop(), url, token)
    if key not in _batchers:
        _batchers[key] = _Batcher(url, token)
    return _batchers[key]


def _text(renderer, tokens: list) -> str:
    message, _ = renderer.parse_response(tokens)  # (message, termination or parse success)
    if renderers is not None and hasattr(renderers, "get_text_content"):
        return renderers.get_text_content(message)  # drops thinking parts
    return kbrl_client.completion_text(message)


class KbrlEnv(Env):
    """One answer to one kbrl task; the reward is the record's (0 for a failure)."""

    def __init__(self, renderer, task_id: int, prompt: dict | None = None, style: str = "body",
                 url: str | None = None, token: str | None = None):
        self.renderer, self.task_id, self.prompt = renderer, int(task_id), prompt
        self.style, self.url, self.token = style, url, token

    async def initial_observation(self):
        if self.prompt is None:
            self.prompt = await asyncio.to_thread(kbrl_client.prompt, self.task_id, self.url, self.style, self.token)
        messages = kbrl_client.prompt_messages(self.prompt)
        return self.renderer.build_generation_prompt(messages), self.renderer.get_stop_sequences()

    async def step(self, action, *, extra=None):
        text = _text(self.renderer, list(action))
        record = await _batcher(self.url, self.token).score({"task_id": self.task_id, "text": text})
        return StepResult(
            reward=kbrl_client.reward_of(record),
            episode_done=True,
            next_observation=tinker.ModelInput.empty(),
            next_stop_condition=self.renderer.get_stop_sequences(),
            metrics=kbrl_client.outcome_metrics(record, "kbrl/"),
        )


class KbrlGroupBuilder(EnvGroupBuilder):
    """`group_size` envs of one task sharing one prompt (GRPO centres rewards over the group)."""

    def __init__(self, renderer, task_id: int, group_size: int, style: str = "body",
                 url: str | None = None, token: str | None = None):
        self.renderer, self.task_id, self.group_size = renderer, int(task_id), group_size
        self.style, self.url, self.token = style, url, token

    async def make_envs(self):
        p = await asyncio.to_thread(kbrl_client.prompt, self.task_id, self.url, self.style, self.token)
        return [KbrlEnv(self.renderer, self.task_id, p, self.style, self.url, self.token)
                for _ in range(self.group_size)]

    def logging_tags(self) -> list[str]:
        return ["kbrl", f"task{self.task_id}"]


class KbrlDataset(RLDataset):
    """Batches of kbrl tasks: batch i is `batch_size` tasks in order (the last may be short), each a
    group of `group_size` envs."""

    def __init__(self, renderer, task_ids, batch_size: int, group_size: int, style: str = "body",
                 url: str | None = None, token: str | None = None):
        self.renderer, self.task_ids, self.batch_size, self.group_size = renderer, list(task_ids), batch_size, group_size
        self.style, self.url, self.token = style, url, token

    def get_batch(self, index: int) -> list:
        tasks = self.task_ids[index * self.batch_size:(index + 1) * self.batch_size]
        return [KbrlGroupBuilder(self.renderer, t, self.group_size, self.style, self.url, self.token) for t in tasks]

    def __len__(self) -> int:
        return -(-len(self.task_ids) // self.batch_size)


class KbrlDatasetBuilder(RLDatasetBuilder):
    """The train split's tasks as the training dataset, the eval split's as the test one (the
    server's splits: GET /v1/tasks)."""

    def __init__(self, renderer, batch_size: int = 8, group_size: int = 8, style: str = "body",
                 url: str | None = None, token: str | None = None):
        self.renderer, self.batch_size, self.group_size = renderer, batch_size, group_size
        self.style, self.url, self.token = style, url, token

    async def __call__(self):
        def split(name):
            ids = [t["id"] for t in kbrl_client.tasks(self.url, self.token, split=name)]
            return KbrlDataset(self.renderer, ids, self.batch_size, self.group_size, self.style, self.url, self.token)
        train, test = await asyncio.to_thread(lambda: (split("train"), split("eval")))
        return train, test

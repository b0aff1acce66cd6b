"""A tinker-cookbook RL environment whose reward is kbrl's.

Implements `tinker_cookbook.rl.types.Env`: `async initial_observation() -> (Observation,
StopCondition)` and `async step(action, *, extra=None) -> StepResult(reward, episode_done,
next_observation, next_stop_condition, metrics)`, where an Action is the sampled token ids and an
Observation a `tinker.ModelInput`; plus an `EnvGroupBuilder` (`async make_envs()`) for GRPO-style
groups. Documented at https://tinker-docs.thinkingmachines.ai/rl/rl-envs and
https://tinker-docs.thinkingmachines.ai/cookbook/api-reference/rl/env (renderers:
https://tinker-docs.thinkingmachines.ai/rendering).

One episode is one answer: the prompt is kbrl's (GET /v1/tasks/{id}/prompt), the renderer decodes
the sampled tokens into a message, and the step marks why the answer ended (`stop/max_tokens` when the
sampler hit its token limit: the cookbook's mark of a truncated answer, which its
TerminationRewardPolicy can clamp; `stop/completed` otherwise). The reward is the group's: when every
answer of a group is in, `KbrlGroupBuilder.compute_group_rewards` sends them as one POST /v1/evaluate
and gives each its record's reward and outcome metrics. `KbrlDatasetBuilder(batch_size=,
group_size=, model_name_for_tokenizer=, ...)` is the cookbook's `RLDatasetBuilder`, a chz config
(awaited, it gives the train split's `RLDataset` and the eval split's): each batch is `batch_size`
tasks, each task a `KbrlGroupBuilder` of `group_size` envs. `settings` go into every item, e.g.
`{"reward": "composite"}`.
"""
from __future__ import annotations

import asyncio
import dataclasses
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kbrl_client  # noqa: E402

try:  # guarded: the file imports (and its helpers work) without tinker-cookbook
    import tinker
    from tinker_cookbook import renderers
    from tinker_cookbook.rl.types import Env, EnvGroupBuilder, RLDataset, RLDatasetBuilder, StepResult
except ImportError:
    tinker = renderers = StepResult = None
    Env = EnvGroupBuilder = RLDataset = RLDatasetBuilder = object
try:  # the cookbook's config library (a dependency of it)
    import chz
except ImportError:
    chz = None


def _config(cls):
    """The cookbook's dataset builders are chz dataclasses (keyword-only, frozen); a frozen dataclass
    stands in where chz is not installed."""
    return chz.chz(cls) if chz is not None else dataclasses.dataclass(frozen=True, kw_only=True)(cls)


def _text(renderer, tokens: list) -> str:
    message, _ = renderer.parse_response(tokens)  # (message, termination or parse success)
    if renderers is not None and hasattr(renderers, "get_text_content"):
        return renderers.get_text_content(message)  # drops thinking parts
    return kbrl_client.completion_text(message)


class KbrlEnv(Env):
    """One answer to one kbrl task. Its step keeps the answer's text and marks why it ended; the reward
    (0 for a failure) comes from its group's `compute_group_rewards`."""

    def __init__(self, renderer, task_id: int, prompt: dict | None = None, style: str = "body",
                 url: str | None = None, token: str | None = None):
        self.renderer, self.task_id, self.prompt = renderer, int(task_id), prompt
        self.style, self.url, self.token = style, url, token
        self.text: str | None = None

    async def initial_observation(self):
        if self.prompt is None:
            self.prompt = await asyncio.to_thread(kbrl_client.prompt, self.task_id, self.url, self.style, self.token)
        messages = kbrl_client.prompt_messages(self.prompt)
        return self.renderer.build_generation_prompt(messages), self.renderer.get_stop_sequences()

    async def step(self, action, *, extra=None):
        self.text = _text(self.renderer, list(action))
        truncated = bool(extra) and extra.get("stop_reason") == "length"
        return StepResult(
            reward=0.0,
            episode_done=True,
            next_observation=tinker.ModelInput.empty(),
            next_stop_condition=self.renderer.get_stop_sequences(),
            metrics={"stop/max_tokens" if truncated else "stop/completed": 1.0},
        )


class KbrlGroupBuilder(EnvGroupBuilder):
    """`group_size` envs of one task sharing one prompt (GRPO centres rewards over the group); the
    group's answers are scored together, one request whose items carry `settings` (e.g.
    `{"reward": "composite", "mode": "fast"}`)."""

    def __init__(self, renderer, task_id: int, group_size: int, style: str = "body",
                 url: str | None = None, token: str | None = None, settings: dict | None = None):
        self.renderer, self.task_id, self.group_size = renderer, int(task_id), group_size
        self.style, self.url, self.token, self.settings = style, url, token, dict(settings or {})

    async def make_envs(self):
        p = await asyncio.to_thread(kbrl_client.prompt, self.task_id, self.url, self.style, self.token)
        return [KbrlEnv(self.renderer, self.task_id, p, self.style, self.url, self.token)
                for _ in range(self.group_size)]

    async def compute_group_rewards(self, trajectory_group, env_group):
        items = [{**self.settings, "task_id": env.task_id, "text": env.text or ""} for env in env_group]
        records = await asyncio.to_thread(kbrl_client.evaluate, items, self.url, self.token)
        return [(kbrl_client.reward_of(r), kbrl_client.outcome_metrics(r, "kbrl/")) for r in records]

    def logging_tags(self) -> list[str]:
        return ["kbrl", f"task{self.task_id}"]


class KbrlDataset(RLDataset):
    """Batches of kbrl tasks: batch i is `batch_size` tasks in order (the last may be short), each a
    group of `group_size` envs."""

    def __init__(self, renderer, task_ids, batch_size: int, group_size: int, style: str = "body",
                 url: str | None = None, token: str | None = None, settings: dict | None = None):
        self.renderer, self.task_ids, self.batch_size, self.group_size = renderer, list(task_ids), batch_size, group_size
        self.style, self.url, self.token, self.settings = style, url, token, settings

    def get_batch(self, index: int) -> list:
        tasks = self.task_ids[index * self.batch_size:(index + 1) * self.batch_size]
        return [KbrlGroupBuilder(self.renderer, t, self.group_size, self.style, self.url, self.token, self.settings)
                for t in tasks]

    def __len__(self) -> int:
        return -(-len(self.task_ids) // self.batch_size)


@_config
class KbrlDatasetBuilder(RLDatasetBuilder):
    """The train split's tasks as the training dataset, the eval split's as the test one (the
    server's splits: GET /v1/tasks). A chz config like the cookbook's own builders: the renderer is
    `renderer_name` (default: the cookbook's recommendation for the model) over
    `model_name_for_tokenizer`'s tokenizer, or a `renderer` object given directly."""

    batch_size: int = 8
    group_size: int = 8
    model_name_for_tokenizer: str = ""
    renderer_name: str | None = None
    style: str = "body"
    url: str | None = None
    token: str | None = None
    settings: dict[str, Any] | None = None
    renderer: Any = None

    def _renderer(self):
        if self.renderer is not None:
            return self.renderer
        if not self.model_name_for_tokenizer:
            raise ValueError("KbrlDatasetBuilder needs model_name_for_tokenizer (or a renderer)")
        from tinker_cookbook import model_info, tokenizer_utils
        name = self.renderer_name or model_info.get_recommended_renderer_name(self.model_name_for_tokenizer)
        return renderers.get_renderer(name, tokenizer_utils.get_tokenizer(self.model_name_for_tokenizer),
                                      model_name=self.model_name_for_tokenizer)

    async def __call__(self):
        renderer = self._renderer()

        def split(name):
            ids = [t["id"] for t in kbrl_client.tasks(self.url, self.token, split=name)]
            return KbrlDataset(renderer, ids, self.batch_size, self.group_size, self.style, self.url, self.token,
                               self.settings)
        train, test = await asyncio.to_thread(lambda: (split("train"), split("eval")))
        return train, test

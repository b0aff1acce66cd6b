"""A TRL GRPOTrainer reward function whose reward is kbrl's.

Implements TRL's custom reward-function interface: GRPOTrainer calls it with keyword arguments
`prompts`, `completions`, `completion_ids`, `trainer_state`, `log_extra`, `log_metric` and every
dataset column but `prompt` (here `task_id`), and it returns one float per completion. With a
standard dataset a completion is a string; with a conversational one it is a list of messages.
Documented at https://huggingface.co/docs/trl/grpo_trainer#using-a-custom-reward-function.

All completions of a call go to kbrl in one POST /v1/evaluate; `kbrl_reward_async` is the same as
a coroutine (TRL awaits async reward functions concurrently with the rest of the step):

    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer
    trainer = GRPOTrainer(model="Qwen/Qwen2.5-0.5B-Instruct", reward_funcs=kbrl_reward,
                          train_dataset=Dataset.from_list(dataset_rows(range(1, 81))),
                          args=GRPOConfig(output_dir="out"))
"""
from __future__ import annotations

import asyncio
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kbrl_client  # noqa: E402


def make_kbrl_reward(settings: dict | None = None, on_records=None):
    """A reward function like kbrl_reward whose items carry `settings` (e.g. {"reward": "composite"})
    and that hands each call's items and records to `on_records(items, records)` (to log them)."""
    def kbrl_reward(completions, task_id, **kwargs) -> list[float]:
        items = [{"task_id": int(t), "text": kbrl_client.completion_text(c), **(settings or {})}
                 for c, t in zip(completions, task_id)]
        records = kbrl_client.evaluate(items)
        if on_records is not None:
            on_records(items, records)
        log_extra, log_metric = kwargs.get("log_extra"), kwargs.get("log_metric")
        if callable(log_extra):  # a column of the completions table
            log_extra("kbrl_outcome", [r.get("outcome", "") for r in records])
        if callable(log_metric) and records:
            log_metric("kbrl/ok_rate", sum(r.get("outcome") == "ok" for r in records) / len(records))
        return [kbrl_client.reward_of(r) for r in records]
    return kbrl_reward


kbrl_reward = make_kbrl_reward()
kbrl_reward.__doc__ = "One kbrl reward per completion (0.0 for every failure under the default speedup reward)."


async def kbrl_reward_async(completions, task_id, **kwargs) -> list[float]:
    """kbrl_reward as a coroutine, for TRL's async reward functions (awaited while the trainer goes
    on): the request runs on a thread."""
    return await asyncio.to_thread(kbrl_reward, completions, task_id, **kwargs)


def dataset_rows(task_ids, style: str = "body", conversational: bool = True) -> list[dict]:
    """Dataset rows: kbrl's prompt (chat messages, or one text) and the `task_id` column."""
    rows = []
    for task_id in task_ids:
        p = kbrl_client.prompt(task_id, style=style)
        text = (p["system"] + "\n\n" + p["user"]) if p.get("system") else p["user"]
        rows.append({"prompt": kbrl_client.prompt_messages(p) if conversational else text, "task_id": int(task_id)})
    return rows

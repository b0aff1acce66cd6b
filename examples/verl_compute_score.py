"""A verl custom reward function whose reward is kbrl's.

verl 0.9 (read at 0.9.1): its reward loop awaits an async `compute_score(data_source, solution_str,
ground_truth, extra_info=None)` per response and logs the extra keys of a returned dict; the
settings are `reward.custom_reward_function.path`, `reward.custom_reward_function.name` and
`reward.reward_manager.name` (naive, dapo, ... ; there is no `batch` manager any more).
`compute_score` here is that coroutine: it returns {"score": kbrl's reward, "kbrl_ok",
"kbrl_compiled", "kbrl_speedup"}; concurrent calls reach kbrl serve as concurrent requests, which it
batches and deduplicates itself.

Older verl (<= 0.5) calls a synchronous function returning a float, or, with
`reward_model.reward_manager=batch`, one with lists: `compute_score_sync` and
`compute_score_batch` (one POST /v1/evaluate for the whole batch) are those.

The task is `extra_info["task_id"]`, else `ground_truth` (a row's reward_model.ground_truth):

    python3 -m verl.trainer.main_ppo ... \\
        reward.custom_reward_function.path=examples/verl_compute_score.py \\
        reward.custom_reward_function.name=compute_score reward.reward_manager.name=naive

These signatures were read from the packages; kbrl's CI runs them against stand-ins
(examples/test_examples.py), not verl itself.
"""
from __future__ import annotations

import asyncio
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kbrl_client  # noqa: E402


def _task_id(ground_truth, extra_info) -> int:
    if isinstance(extra_info, dict) and extra_info.get("task_id") is not None:
        return int(extra_info["task_id"])
    return int(ground_truth)


async def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs) -> dict:
    """verl 0.9: kbrl's reward of one response as {"score", ...} (score 0.0 for every failure under
    the default speedup reward); the request runs on a thread, so verl's loop goes on meanwhile."""
    item = {"task_id": _task_id(ground_truth, extra_info), "text": solution_str}
    [record] = await asyncio.to_thread(kbrl_client.evaluate, [item])
    metrics = kbrl_client.outcome_metrics(record)
    return {"score": kbrl_client.reward_of(record), "kbrl_ok": metrics["kbrl_ok"],
            "kbrl_compiled": metrics["kbrl_compiled"],
            "kbrl_speedup": kbrl_client.reward_of({"reward": record.get("speedup", 0.0)})}


def compute_score_sync(data_source, solution_str, ground_truth, extra_info=None, **kwargs) -> float:
    """verl <= 0.5: kbrl's reward of one response as a float."""
    [record] = kbrl_client.evaluate([{"task_id": _task_id(ground_truth, extra_info), "text": solution_str}])
    return kbrl_client.reward_of(record)


def compute_score_batch(data_sources, solution_strs, ground_truths, extra_infos=None, **kwargs) -> list[float]:
    """The batch reward manager's form: one reward per response, one request for all of them."""
    extra_infos = extra_infos if extra_infos is not None else [None] * len(solution_strs)
    items = [{"task_id": _task_id(g, e), "text": s} for s, g, e in zip(solution_strs, ground_truths, extra_infos)]
    return [kbrl_client.reward_of(r) for r in kbrl_client.evaluate(items)]


def make_row(task_id: int, split: str = "train", style: str = "body") -> dict:
    """One row of a verl RL parquet file for a kbrl task (prompt as chat messages)."""
    p = kbrl_client.prompt(task_id, style=style)
    return {"data_source": "kbrl", "prompt": kbrl_client.prompt_messages(p), "ability": "cuda",
            "reward_model": {"style": "rule", "ground_truth": str(task_id)},
            "extra_info": {"task_id": int(task_id), "split": split, "prompt_version": p.get("version", "")}}

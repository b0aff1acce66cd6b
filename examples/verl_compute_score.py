"""A verl custom reward function whose reward is kbrl's.

Implements verl's custom reward interface: `compute_score(data_source, solution_str, ground_truth,
extra_info=None)` returning a float (verl also takes a dict with a "score" key), named by
`custom_reward_function.path` and `custom_reward_function.name` (the name defaults to
compute_score). verl's batch reward manager (`reward_model.reward_manager=batch`) calls the name
instead with lists: `compute_score_batch(data_sources, solution_strs, ground_truths, extra_infos)`,
which sends the whole batch in one POST /v1/evaluate; the per-sample form sends one request per
response. Documented at https://verl.readthedocs.io/en/latest/preparation/reward_function.html
(and the config page it links, "custom_reward_function").

The task is `extra_info["task_id"]`, else `ground_truth` (a row's reward_model.ground_truth):

    python3 -m verl.trainer.main_ppo ... \\
        custom_reward_function.path=examples/verl_compute_score.py \\
        custom_reward_function.name=compute_score_batch reward_model.reward_manager=batch
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kbrl_client  # noqa: E402


def _task_id(ground_truth, extra_info) -> int:
    if isinstance(extra_info, dict) and extra_info.get("task_id") is not None:
        return int(extra_info["task_id"])
    return int(ground_truth)


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs) -> float:
    """kbrl's reward of one response (0.0 for every failure under the default speedup reward)."""
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

"""A verifiers Rubric whose reward is kbrl's.

Implements the verifiers reward-function interface: `vf.Rubric(funcs=[...], weights=[...])` calls
each function with the arguments it names (prompt, completion, answer, state, info, task, ...;
`**kwargs` takes them all); a function whose arguments are plural (completions, answers, infos,
states) is a group function scoring all rollouts of one example at once and returning a list of
floats. Documented at https://docs.primeintellect.ai/verifiers/environments ("Rubrics",
"Group-Based Reward Functions"). This is the classic stack of verifiers <= 0.3 (tested with
0.3.1): verifiers 0.4 keeps only `verifiers.v1`, where a taskset's Task scores with `@vf.reward`
methods; for verifiers 0.4 use verifiers_env.py (its `load_environment()`, or `vf-eval
verifiers_env`). A Rubric logs an exception of a reward function and scores its rollouts 0.0, so
a server that stays down shows as zero rewards and an error log.

kbrl scores the whole group in one POST /v1/evaluate. The task comes from `info["task_id"]`, else
from `answer` (a dataset row's answer holding the task id):

    import verifiers as vf
    from datasets import Dataset
    rubric = make_rubric()
    env = vf.SingleTurnEnv(dataset=Dataset.from_list(dataset_rows([19, 20])), rubric=rubric)
"""
from __future__ import annotations

import asyncio
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kbrl_client  # noqa: E402


def _task_id(answer, info) -> int:
    if isinstance(info, dict) and info.get("task_id") is not None:
        return int(info["task_id"])
    return int(answer)


def make_reward_func(url: str | None = None, token: str | None = None):
    """The group reward function: one kbrl reward per completion."""

    async def kbrl_reward(completions, answers, infos, **kwargs) -> list[float]:
        infos = infos or [{}] * len(completions)
        answers = answers or [""] * len(completions)
        items = [{"task_id": _task_id(a, i), "text": kbrl_client.completion_text(c)}
                 for c, a, i in zip(completions, answers, infos)]
        records = await asyncio.to_thread(kbrl_client.evaluate, items, url, token)
        states = kwargs.get("states")
        if states:  # keep the verdicts next to the rollouts
            for state, record in zip(states, records):
                state["kbrl_outcome"] = record.get("outcome", "")
        return [kbrl_client.reward_of(r) for r in records]

    return kbrl_reward


def make_rubric(url: str | None = None, token: str | None = None, weight: float = 1.0):
    """`vf.Rubric(funcs=[kbrl_reward], weights=[weight])`."""
    import verifiers as vf  # lazily: the helpers above work without verifiers

    if not hasattr(vf, "Rubric"):
        raise ImportError(f"verifiers {getattr(vf, '__version__', '?')} has no vf.Rubric (0.4 keeps only "
                          "verifiers.v1): install verifiers<0.4 for this example")
    return vf.Rubric(funcs=[make_reward_func(url, token)], weights=[weight])


def dataset_rows(task_ids, style: str = "body", url: str | None = None, token: str | None = None) -> list[dict]:
    """Rows for a verifiers dataset: kbrl's prompt as chat messages, the task id as answer and info."""
    rows = []
    for task_id in task_ids:
        p = kbrl_client.prompt(task_id, url, style, token)
        rows.append({"prompt": kbrl_client.prompt_messages(p), "answer": str(task_id),
                     "info": {"task_id": int(task_id), "prompt_version": p.get("version", "")}})
    return rows

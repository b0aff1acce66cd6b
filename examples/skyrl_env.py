"""kbrl as a SkyRL-Gym environment (tested with skyrl-gym 0.4.0), for SkyRL-train's generator.

SkyRL-Gym's text environment (`skyrl_gym.envs.base_text_env.BaseTextEnv`) is made per trajectory
with `skyrl_gym.make(env_class, env_config=..., extras=<the dataset row>)`, started with
`init(prompt)` and driven by `step(model_text) -> {observations, reward, done, metadata}`. Here one
trajectory is one answer: `step` scores the text with kbrl (one POST /v1/evaluate through
kbrl_client) and ends the episode with kbrl's reward.

    import skyrl_env
    skyrl_env.register()                         # env_class "kbrl" in SkyRL-Gym's registry
    rows = skyrl_env.dataset_rows("train")       # SkyRL's dataset rows (prompt, env_class, reward_spec,
                                                 # extra_info); write them as parquet for data.train_data
    env = skyrl_gym.make("kbrl", env_config={"url": "http://GPU-HOST:8750"}, extras=rows[0])
    prompt, _ = env.init(rows[0]["prompt"])
    out = env.step(model_text)                   # out["reward"], out["metadata"]["kbrl_outcome"]

A row's task is `extra_info.task_id` (else `reward_spec.ground_truth`). env_config (SkyRL's
`environment.skyrl_gym.kbrl` section, or a dict): `url` (else KBRL_SERVE_URL), `token` (else
KBRL_SERVE_TOKEN), and any of `mode`, `tolerance`, `inputs`, `reward` for the item. A candidate's
failure scores as kbrl scores it (0.0 under the default `speedup` reward); a server that cannot be
reached raises (SkyRL records the trajectory as failed) rather than passing as a zero reward.
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kbrl_client  # noqa: E402

try:  # guarded: the module imports without skyrl-gym (dataset_rows still works)
    import skyrl_gym
    from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput
except ImportError:
    skyrl_gym = None
    BaseTextEnv, BaseTextEnvStepOutput = object, dict

ENV_CLASS = "kbrl"
ITEM_SETTINGS = ("mode", "tolerance", "inputs", "reward")


def _task_of(extras) -> int:
    info = (extras or {}).get("extra_info") or {}
    spec = (extras or {}).get("reward_spec") or {}
    task = info.get("task_id", spec.get("ground_truth"))
    try:
        return int(task)
    except (TypeError, ValueError):
        raise ValueError(f"kbrl env: a row needs extra_info.task_id or reward_spec.ground_truth (a kbrl task id, "
                         f"1..100), got {task!r}") from None


class KbrlSkyrlEnv(BaseTextEnv):
    """One answer per trajectory, rewarded by kbrl."""

    def __init__(self, env_config=None, extras=None):
        super().__init__()
        self.turns, self.max_turns = 0, 1  # one answer per trajectory
        config = env_config or {}
        self.task_id = _task_of(extras)
        self.url = config.get("url") or None
        self.token = config.get("token") or None
        self.settings = {k: config.get(k) for k in ITEM_SETTINGS if config.get(k)}
        self.record: dict = {}

    def step(self, action: str):
        self.turns += 1
        item = {"task_id": self.task_id, "text": kbrl_client.completion_text(action), **self.settings}
        self.record = kbrl_client.evaluate([item], self.url, self.token)[0]
        error = self.record.get("error")
        metadata = {"kbrl_outcome": self.record.get("outcome", "error"), "kbrl_speedup": self.record.get("speedup"),
                    "kbrl_key": self.record.get("key"), "kbrl_detail": (error or {}).get("message") or
                    self.record.get("outcome_detail", "")}
        return BaseTextEnvStepOutput(observations=[], reward=kbrl_client.reward_of(self.record), done=True,
                                     metadata=metadata)

    def get_metrics(self):
        return kbrl_client.outcome_metrics(self.record)


def register(env_id: str = ENV_CLASS) -> None:
    """Registers KbrlSkyrlEnv in SkyRL-Gym's registry as `env_id` (call it where SkyRL-train starts)."""
    if skyrl_gym is None:
        raise ImportError("skyrl_env.register needs skyrl-gym (pip install skyrl-gym==0.4.0)")
    skyrl_gym.register(id=env_id, entry_point=f"{__name__}:KbrlSkyrlEnv")


def dataset_rows(split: str = "train", style: str = "body", url=None, token=None, env_class: str = ENV_CLASS):
    """One SkyRL dataset row per task of a split: kbrl's prompt as chat messages, the env class, the
    task id as reward_spec.ground_truth and extra_info.task_id."""
    rows = []
    for task in kbrl_client.tasks(url, token, split=split):
        p = kbrl_client.prompt(task["id"], url, style, token)
        rows.append({"data_source": "kbrl", "prompt": kbrl_client.prompt_messages(p), "env_class": env_class,
                     "reward_spec": {"method": "kbrl", "ground_truth": task["id"]},
                     "extra_info": {"task_id": task["id"], "task_name": task["name"], "prompt_version": p["version"]}})
    return rows

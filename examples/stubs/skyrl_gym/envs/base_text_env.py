"""Stand-in for skyrl_gym.envs.base_text_env: BaseTextEnv and its step output."""
from typing import Any, Dict, List, TypedDict

from skyrl_gym.core import Env


class BaseTextEnvStepOutput(TypedDict):
    observations: List[Dict[str, str]]
    reward: float
    done: bool
    metadata: Dict[str, Any]


class BaseTextEnv(Env):
    def __init__(self):
        self.turns = 0
        self.max_turns = 1

    def get_metrics(self):
        return {}

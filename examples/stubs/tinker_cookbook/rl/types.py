"""Stand-in for tinker_cookbook.rl.types: Env, EnvGroupBuilder, RLDataset, RLDatasetBuilder, StepResult."""
from dataclasses import dataclass, field


class Env:
    async def initial_observation(self):
        raise NotImplementedError

    async def step(self, action, *, extra=None):
        raise NotImplementedError


class EnvGroupBuilder:
    async def make_envs(self):
        raise NotImplementedError


class RLDataset:
    def get_batch(self, index):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError


class RLDatasetBuilder:
    async def __call__(self):
        raise NotImplementedError


@dataclass
class StepResult:
    reward: float
    episode_done: bool
    next_observation: object
    next_stop_condition: list
    metrics: dict = field(default_factory=dict)
    logs: dict = field(default_factory=dict)

"""Stand-in for skyrl-gym (0.4.0's names only): Env, register and make over a dict registry."""
import importlib

from skyrl_gym.core import Env

_registry = {}


def register(id, entry_point=None, kwargs=None):
    _registry[id] = (entry_point, dict(kwargs or {}))


def make(id, **kwargs):
    entry_point, defaults = _registry[id]
    if isinstance(entry_point, str):
        module, name = entry_point.split(":")
        entry_point = getattr(importlib.import_module(module), name)
    env = entry_point(**{**defaults, **kwargs})
    if not isinstance(env, Env):
        raise TypeError(f"the environment must inherit from skyrl_gym.Env, actual class: {type(env)}")
    return env

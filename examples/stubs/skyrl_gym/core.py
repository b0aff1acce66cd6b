"""Stand-in for skyrl_gym.core: the Env base class."""


class Env:
    def step(self, action):
        raise NotImplementedError

    def init(self, prompt):
        return prompt, {}

    def close(self):
        pass

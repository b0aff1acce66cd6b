"""Stand-in for verifiers: Rubric(funcs, weights) only."""


class Rubric:
    def __init__(self, funcs=None, weights=None, parser=None):
        self.funcs = list(funcs or [])
        self.weights = list(weights or [1.0] * len(self.funcs))
        if len(self.weights) != len(self.funcs):
            raise ValueError("one weight per function")

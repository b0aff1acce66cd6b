"""Stand-in for the tinker SDK: only ModelInput (a list of token ids)."""


class ModelInput:
    def __init__(self, tokens=()):
        self.tokens = list(tokens)

    @classmethod
    def from_ints(cls, tokens):
        return cls(tokens)

    @classmethod
    def empty(cls):
        return cls()

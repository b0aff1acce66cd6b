"""What the example tests score: fixed answers to task 19 (ReLU: x, y float32 [4096, 393216]; kbrl's
prelude defines y_numel), and a renderer whose tokens are a text's UTF-8 bytes (a real renderer needs
a tokenizer)."""

TASK = 19
GOOD = ("One thread per element; NaN passes through as in torch.relu.\n\n```cuda\n"
        "long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
        "if (i < y_numel) y[i] = x[i] < 0.f ? 0.f : x[i];\n```\n")
BROKEN = "```cuda\ny[0] = not_a_variable;\n```\n"
# Prose alone would be read as a kernel body and compiled; an empty block is a text with no code.
NO_CODE = "I cannot write this kernel.\n\n```cuda\n```\n"


class ByteRenderer:
    """The part of a tinker-cookbook renderer tinker_env.py uses. Module level, so it pickles."""

    def build_generation_prompt(self, messages):
        import tinker  # the SDK, or examples/stubs' stand-in: whichever the test put on the path
        return tinker.ModelInput.from_ints(list("\n".join(m["content"] for m in messages).encode()))

    def get_stop_sequences(self):
        return []

    def parse_response(self, tokens):
        return {"role": "assistant", "content": bytes(tokens).decode("utf-8")}, True

"""The anchor of bench_lm's BM_UpdateGpu: the same SFT update through Hugging Face transformers + peft.

What the usual tools do (TRL's SFTTrainer over transformers and peft): every sequence is its whole
prompt and completion, the loss on the completion's tokens only. The work is BM_UpdateGpu's:
SmolLM2-135M's shapes with random weights in bfloat16, LoRA rank 16 (alpha 32) on every projection,
one update over K = 64 completions of 1,024 tokens after a 3,105-token prompt, AdamW on the adapter.
kbrl computes the shared prompt once per micro-batch; transformers computes it for every row.

Prints one line per configuration: trained completion tokens/s over the timed updates (after one
warm-up), seconds per update, peak GPU memory. An anchor for the figures, not part of kbrl.

    python3 .ci/hf-update-anchor.py [--configs 8:0,16:0,16:1,32:1] [--updates 2]
"""
from __future__ import annotations

import argparse
import sys
import time


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--k", type=int, default=64, help="completions in the update")
    p.add_argument("--prompt", type=int, default=3105, help="prompt tokens")
    p.add_argument("--completion", type=int, default=1024, help="completion tokens")
    p.add_argument("--configs", default="8:0,16:0,16:1,32:1", help="micro_batch:checkpointing, comma-separated")
    p.add_argument("--updates", type=int, default=2, help="timed updates after one warm-up")
    args = p.parse_args()
    try:
        import torch
        import transformers
        from peft import LoraConfig, get_peft_model
    except ImportError as e:
        print(f"hf-update-anchor: {e} (needs torch, transformers and peft)", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("hf-update-anchor: no GPU visible", file=sys.stderr)
        return 2
    import peft

    config = transformers.LlamaConfig(
        vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
        num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=8192, rms_norm_eps=1e-5,
        rope_theta=100000.0, tie_word_embeddings=True)
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, peft {peft.__version__}, "
          f"{torch.cuda.get_device_name(0)}; K = {args.k} x {args.completion} completion tokens after "
          f"{args.prompt} prompt tokens, LoRA rank 16 on q,k,v,o,gate,up,down, bfloat16, sdpa", flush=True)
    length = args.prompt + args.completion
    g = torch.Generator().manual_seed(13)
    ids = torch.randint(0, config.vocab_size, (args.k, length), generator=g)
    ids[:, : args.prompt] = ids[0, : args.prompt]  # one prompt, as a GRPO group or BM_UpdateGpu's
    labels = ids.clone()
    labels[:, : args.prompt] = -100
    ids, labels = ids.cuda(), labels.cuda()  # on the GPU before any timing
    for spec in args.configs.split(","):
        micro, checkpointing = (int(x) for x in spec.split(":"))
        torch.manual_seed(0)
        model = transformers.LlamaForCausalLM(config).to("cuda", torch.bfloat16)
        model.config._attn_implementation = "sdpa"
        model.config.use_cache = False  # training: no key/value cache built, as trainers set it
        model = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, target_modules=[
            "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]))
        for n, t in model.named_parameters():
            if t.requires_grad:
                t.data = t.data.float()  # float32 LoRA, as kbrl's
        if checkpointing:  # non-reentrant: the frozen embeddings' output need not require grad
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.train()
        optimizer = torch.optim.AdamW([t for t in model.parameters() if t.requires_grad], lr=1e-5)

        def update() -> None:
            optimizer.zero_grad(set_to_none=True)
            for start in range(0, args.k, micro):
                x = ids[start:start + micro]
                y = labels[start:start + micro]
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    loss = model(input_ids=x, labels=y, use_cache=False).loss * (x.shape[0] / args.k)
                loss.backward()
            optimizer.step()

        try:
            update()  # warm-up
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            t0 = time.perf_counter()
            for _ in range(args.updates):
                update()
            torch.cuda.synchronize()
            seconds = (time.perf_counter() - t0) / args.updates
            peak = torch.cuda.max_memory_allocated() / 2**30
            print(f"hf_sft micro_batch={micro} checkpointing={checkpointing}: "
                  f"tokens/s={args.k * args.completion / seconds:.0f} update_s={seconds:.3f} peak_GiB={peak:.1f}",
                  flush=True)
        except torch.cuda.OutOfMemoryError:
            print(f"hf_sft micro_batch={micro} checkpointing={checkpointing}: out of memory", flush=True)
        del model, optimizer
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A few GRPO steps of TRL's GRPOTrainer on kbrl's tasks, every completion scored by `kbrl serve`.

The reward is trl_reward.py's (one POST /v1/evaluate per reward call). The model is a Hugging Face
model folder (--model) or a GGUF file (--gguf: transformers dequantizes it; it needs the `gguf`
package), optionally with an adapter that kbrl trained (--kbrl-adapter: `kbrl sft` / `kbrl train`'s
adapter.pt, merged into the weights before TRL adds its own LoRA). Needs trl (tested with 1.16.0),
transformers, peft, datasets and torch, and a running server ($KBRL_SERVE_URL):

    kbrl serve --port 8750 &
    python3 examples/trl_grpo.py --gguf SmolLM2-135M-Instruct.Q4_1.gguf --tasks 1,23,25 --steps 8 --out runs/trl

Writes to --out, as the run goes (a run stopped part way keeps its steps so far): steps.csv (TRL's
logged metrics, one row per step, and the step's wall seconds) and completions.csv (each completion's
task, outcome, reward, speedup, length and kbrl's detail of the outcome, as kbrl scored it); at the
end run.json (versions, device, settings, wall time, seconds spent waiting on kbrl).
"""
from __future__ import annotations

import argparse
import collections
import csv
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kbrl_client  # noqa: E402
import trl_reward  # noqa: E402

# SmolLM2's chat format, for a tokenizer read from a GGUF file without a template.
CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
# kbrl's projection names (policies/lm/llama_model.cpp) -> the Hugging Face Llama module names.
PROJECTIONS = {"q": "self_attn.q_proj", "k": "self_attn.k_proj", "v": "self_attn.v_proj",
               "o": "self_attn.o_proj", "gate": "mlp.gate_proj", "up": "mlp.up_proj", "down": "mlp.down_proj"}


def read_kbrl_adapter(path: str) -> tuple[float, dict]:
    """kbrl's adapter file (a libtorch archive): its scale alpha / rank and {(layer, projection): (a, b)}."""
    import torch
    tensors = torch.jit.load(path, map_location="cpu").state_dict()  # "lora.{layer}.{projection}.{a,b}", ...
    rank, alpha = tensors.get("lora.rank"), tensors.get("lora.alpha")
    if rank is None or alpha is None:
        raise SystemExit(f"{path} is not a kbrl LoRA adapter (no lora.rank / lora.alpha); keys: {sorted(tensors)[:8]}")
    pairs = {}
    for key, t in tensors.items():
        parts = key.split(".")
        if len(parts) == 4 and parts[0] == "lora" and parts[3] in ("a", "b"):
            pairs.setdefault((int(parts[1]), parts[2]), {})[parts[3]] = t
    if not pairs:
        raise SystemExit(f"{path} adapts no projection")
    return float(alpha.item()) / float(rank.item()), {k: (v["a"], v["b"]) for k, v in pairs.items()}


def merge_kbrl_adapter(model, path: str) -> int:
    """Adds b @ a * scale to each adapted weight (kbrl's merge, policies/lm/decoder_weights.h);
    returns how many weights it changed."""
    import torch
    scale, pairs = read_kbrl_adapter(path)
    modules = dict(model.named_modules())
    for (layer, proj), (a, b) in pairs.items():
        name = f"model.layers.{layer}.{PROJECTIONS[proj]}"
        if name not in modules:
            raise SystemExit(f"{path}: the model has no {name} (another architecture?)")
        w = modules[name].weight
        delta = torch.matmul(b.float(), a.float()) * scale
        if tuple(delta.shape) != tuple(w.shape):
            raise SystemExit(f"{path}: {name} is {tuple(w.shape)}, the adapter's update {tuple(delta.shape)}")
        with torch.no_grad():
            w.copy_((w.float() + delta.to(w.device)).to(w.dtype))
    return len(pairs)


def load_model(args):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    if args.gguf:
        folder, kw = os.path.dirname(os.path.abspath(args.gguf)), {"gguf_file": os.path.basename(args.gguf)}
    else:
        folder, kw = args.model, {}
    dtype = torch.bfloat16 if args.bf16 else torch.float32
    tokenizer = AutoTokenizer.from_pretrained(folder, **kw)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype, **kw)
    if args.gguf:  # the GGUF loader de-quantizes every weight but marks the model quantized, which Trainer refuses
        model.is_quantized, model.hf_quantizer = False, None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
    if not getattr(tokenizer, "chat_template", None):
        tokenizer.chat_template = CHATML
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    merged = merge_kbrl_adapter(model, args.kbrl_adapter) if args.kbrl_adapter else 0
    return model, tokenizer, merged


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--model", help="a Hugging Face model folder")
    src.add_argument("--gguf", help="a GGUF model file")
    p.add_argument("--kbrl-adapter", help="a kbrl adapter.pt to merge into the weights first")
    p.add_argument("--tasks", help="task ids, comma-separated (default: the server's train split)")
    p.add_argument("--style", default="body", choices=["body", "file"], help="kbrl's prompt style")
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--group", type=int, default=8, help="completions per prompt (num_generations)")
    p.add_argument("--prompts", type=int, default=2, help="prompts per step")
    p.add_argument("--max-completion-length", type=int, default=1024)
    p.add_argument("--temperature", type=float, default=0.7)
    p.add_argument("--learning-rate", type=float, default=1e-5)
    p.add_argument("--lora-rank", type=int, default=16)
    p.add_argument("--bf16", action="store_true", help="bfloat16 weights and training (a GPU's choice)")
    p.add_argument("--reward", default="", help="kbrl's reward for these items (e.g. composite); default the server's")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    if args.steps < 1 or args.group < 2 or args.prompts < 1:
        p.error("--steps >= 1, --group >= 2 (GRPO's advantages need two completions), --prompts >= 1")
    for flag, path in (("--gguf", args.gguf), ("--kbrl-adapter", args.kbrl_adapter)):
        if path and not os.path.isfile(path):
            p.error(f"{flag} {path}: no such file")
    start = time.time()
    try:
        listed = kbrl_client.tasks(split=None if args.tasks else "train")
    except (kbrl_client.KbrlError, OSError) as e:
        sys.exit(f"trl_grpo: kbrl serve at {os.environ.get('KBRL_SERVE_URL') or kbrl_client.DEFAULT_URL} "
                 f"cannot be reached ({e}): start it (kbrl serve) or set KBRL_SERVE_URL")
    known = {t["id"] for t in listed}
    task_ids = [int(t) for t in args.tasks.split(",")] if args.tasks else sorted(known)
    unknown = [t for t in task_ids if t not in known]
    if unknown:
        sys.exit(f"trl_grpo: unknown task ids {unknown} (the server lists {len(known)} tasks)")
    rows = trl_reward.dataset_rows(task_ids, style=args.style)
    os.makedirs(args.out, exist_ok=True)

    import datasets  # after the server's checks: a server that is down fails in a second, not after torch loads
    import peft
    import torch
    import transformers
    import trl

    model, tokenizer, merged = load_model(args)
    scored = []  # (step, task_id, outcome, reward, speedup, completion characters, detail)
    waited = [0.0]
    step_of = [0]
    completions_file = open(os.path.join(args.out, "completions.csv"), "w", newline="")
    completions_csv = csv.writer(completions_file)
    completions_csv.writerow(["step", "task_id", "outcome", "reward", "speedup", "characters", "detail"])

    def on_records(items, records):
        for item, r in zip(items, records):
            detail = r.get("outcome_detail") or r.get("error", {}).get("message", "")
            scored.append((step_of[0], item["task_id"], r.get("outcome", ""), kbrl_client.reward_of(r),
                           r.get("speedup", ""), len(item["text"]), " ".join(str(detail).split())[:300]))
            completions_csv.writerow(scored[-1])
        completions_file.flush()

    scorer = trl_reward.make_kbrl_reward({"reward": args.reward} if args.reward else None, on_records)

    def kbrl_reward(completions, task_id, **kwargs):  # TRL logs its metrics under this name
        t0 = time.time()
        rewards = scorer(completions, task_id, **kwargs)
        waited[0] += time.time() - t0
        return rewards

    step_seconds = {}

    class StepClock(transformers.TrainerCallback):
        def on_step_begin(self, a, state, control, **kw):
            self.t0 = time.time()
            step_of[0] = state.global_step + 1

        def on_step_end(self, a, state, control, **kw):
            step_seconds[state.global_step] = time.time() - self.t0

        def on_log(self, a, state, control, **kw):  # each step's row as it is logged
            write_steps(state.log_history)

    def write_steps(history):
        logged = [dict(e) for e in history if "step" in e and "loss" in e]
        for e in logged:
            e["step_seconds"] = step_seconds.get(e["step"], "")
        columns = ["step"] + sorted({k for e in logged for k in e} - {"step"})
        with open(os.path.join(args.out, "steps.csv.part"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=columns)
            w.writeheader()
            w.writerows(logged)
        os.replace(os.path.join(args.out, "steps.csv.part"), os.path.join(args.out, "steps.csv"))

    config = trl.GRPOConfig(
        output_dir=os.path.join(args.out, "trainer"), max_steps=args.steps,
        per_device_train_batch_size=args.group * args.prompts, num_generations=args.group,
        max_completion_length=args.max_completion_length, temperature=args.temperature,
        learning_rate=args.learning_rate, beta=0.0, logging_steps=1, report_to="none", save_strategy="no",
        bf16=args.bf16, seed=args.seed)
    trainer = trl.GRPOTrainer(
        model=model, processing_class=tokenizer, reward_funcs=kbrl_reward, args=config,
        train_dataset=datasets.Dataset.from_list(rows), callbacks=[StepClock()],
        peft_config=peft.LoraConfig(r=args.lora_rank, lora_alpha=2 * args.lora_rank,
                                    target_modules="all-linear", task_type="CAUSAL_LM"))
    try:
        trainer.train()
    finally:
        completions_file.close()
        write_steps(trainer.state.log_history)
    wall = time.time() - start
    outcomes = collections.Counter(s[2] for s in scored)
    run = {"trl": trl.__version__, "transformers": transformers.__version__, "peft": peft.__version__,
           "datasets": datasets.__version__, "torch": torch.__version__,
           "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu",
           "model": args.gguf or args.model, "kbrl_adapter": args.kbrl_adapter or "", "merged_projections": merged,
           "tasks": task_ids, "settings": {k: v for k, v in vars(args).items() if k not in ("out",)},
           "server": os.environ.get("KBRL_SERVE_URL") or kbrl_client.DEFAULT_URL,
           "wall_seconds": round(wall, 1), "kbrl_wait_seconds": round(waited[0], 1),
           "completions": len(scored), "outcomes": dict(outcomes),
           "correct": outcomes.get("ok", 0)}
    with open(os.path.join(args.out, "run.json"), "w") as f:
        json.dump(run, f, indent=2)
    print(f"trl_grpo: {args.steps} steps, {len(scored)} completions scored by kbrl ({dict(outcomes)}), "
          f"{wall:.0f} s ({waited[0]:.0f} s waiting on kbrl)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

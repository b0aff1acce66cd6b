# The GRPO report's Figure 2: the SFT warm start's cross-entropy per step (grpo_report/sft_steps.csv).
# Left: the evaluation loss, NLL per token of the held-out answers (the eval split's; step 0 is
# before training); right: the training loss of each step's batch. Vertical lines mark epochs.
load dir."/style.gp"
f = results."/grpo_report/sft_steps.csv"
set multiplot layout 1,2 title "SFT warm start (LoRA): cross-entropy per step"
set xlabel "step"
set ylabel "NLL per token (nats)"
set yrange [0:*]
unset key
stats f using "step" nooutput
if (STATS_max == STATS_min) { set xrange [STATS_min - 1:STATS_max + 1] }
set title "evaluation loss (held-out answers)"
plot f using "step":"eval_nll_per_token" with linespoints ls 1
set title "training loss (the step's batch)"
stats f using "train_loss" nooutput  # step 0 has none
if (STATS_records == 1) { set xrange [0:2] }
unset ylabel
plot f using "step":"train_loss" with linespoints ls 2
unset multiplot

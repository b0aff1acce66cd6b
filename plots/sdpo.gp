# SDPO (surprisal report Appendix E): sdpo/sdpo_steps.csv, fast_1 per step of BoA-GRPO, SDPO with
# execution feedback and SDPO prompt-only (one line per method and seed).
load dir."/style.gp"
set title "SDPO vs GRPO test-time adaptation (subset 1)" noenhanced
set xlabel "step"
set ylabel "fast_1"
set yrange [0:1.05]
set key outside right
f = results."/sdpo/sdpo_steps.csv"
runs = system("tail -n +2 '".f."' | cut -d, -f1 | sort -u | tr '\\n' ' '")
plot for [r in runs] f using 2:(strcol(1) eq r ? $7 : 1/0) with linespoints lw 2 title r

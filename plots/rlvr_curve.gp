# RLVR training curve (self-improvement report 6.1; surprisal report Appendix B):
# base_policy/rlvr_steps.csv, per step: correctness, fast_1 (dashed: sig_fast_1, significantly faster
# than the reference) and mean reward of the step's rollouts
# (a step's batch of tasks; with more train tasks than tasks per batch, steps see different tasks).
# base_policy/rlvr_eval.csv: the same seeded samples of every train task before the first update and
# at each checkpoint (the surprisal report's Appendix B: steps 10, 20, 30, 40 at paper budget), drawn
# as large markers at the step of the checkpoint. (Results older than that have two rows, before and
# after RLVR, with step 0 and 1: they are drawn at the first and the last step.)
height = 680
load dir."/style.gp"
f = results."/base_policy/rlvr_steps.csv"
e = results."/base_policy/rlvr_eval.csv"
stats f using 2 nooutput  # before any axis range: stats skips values outside the y range
last = STATS_max
set title "RLVR (GRPO + LoRA) on the train split" noenhanced
set xlabel "step"
set ylabel "fraction of rollouts"
set y2label "mean reward"
set ytics nomirror
set y2tics
set yrange [0:1.05]
set key below horizontal maxcols 2 font ",10"  # under the plot: no key over the data
# Columns by name: the committed results of older runs (results/DEVICE/BUDGET/) have no sig_fast_1
# column, and the columns after it sit one place earlier there; their figures redraw without it.
has_sig = strstrt(system("head -n 1 '".f."'"), ",sig_fast_1,") > 0
sig = has_sig ? 'f using "step":"sig_fast_1" with linespoints ls 2 dt 2 title "sig_fast_1",' : ''
# x of an evaluation row: its step; in the older before/after files, 0 and 1 mapped to 0 and the last.
old_eval = strstrt(system("cut -d, -f1 '".e."'"), "after_rlvr") > 0
eval_x(s) = old_eval ? s * last : s
plot f using "step":"correct_rate" with linespoints ls 1 title "correct", \
     f using "step":"fast_1" with linespoints ls 2 title "fast_1", \
     @sig \
     f using "step":"mean_reward" axes x1y2 with linespoints ls 3 title "mean reward (right)", \
     e using (eval_x($2)):"fast_1" with linespoints ls 2 pt 5 ps 2.5 title "fast_1, all train tasks at each checkpoint", \
     e using (eval_x($2)):"mean_reward" axes x1y2 with linespoints ls 3 pt 9 ps 2.5 \
       title "mean reward, all train tasks at each checkpoint (right)"

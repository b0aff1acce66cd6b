# RLVR training curve (self-improvement report 6.1; surprisal report Appendix B):
# base_policy/rlvr_steps.csv, per step: correctness, fast_1 and mean reward of the step's rollouts.
load dir."/style.gp"
set title "RLVR (GRPO + LoRA) on the train split" noenhanced
set xlabel "step"
set ylabel "fraction of rollouts"
set y2label "mean reward"
set ytics nomirror
set y2tics
set yrange [0:1.05]
set key bottom right
f = results."/base_policy/rlvr_steps.csv"
plot f using 2:6 with linespoints ls 1 title "correct", \
     f using 2:7 with linespoints ls 2 title "fast_1", \
     f using 2:9 axes x1y2 with linespoints ls 3 title "mean reward (right)"

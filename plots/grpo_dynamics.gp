# The GRPO report's Figure 3: GRPO's training dynamics per step (grpo_report/grpo_steps.csv): the
# loss (top) and the mean reward of the step's G rollouts (bottom: the composite reward plus the
# judge's bonus), with the correct rate of the rollouts beside it (right axis).
height = 760
load dir."/style.gp"
f = results."/grpo_report/grpo_steps.csv"
set multiplot layout 2,1 title "GRPO (one prompt per step, G rollouts): loss and reward"
set xlabel "step"
unset key
set ylabel "loss"
set title "loss (one update per batch: the ratio is 1 and the loss is -mean(advantage), 0 with equal lengths)"
stats f using "loss" nooutput
if (STATS_max == STATS_min) { set yrange [STATS_min - 1:STATS_max + 1] }
plot f using "step":"loss" with linespoints ls 3
set autoscale y
set title "reward"
set ylabel "mean reward of the step's rollouts"
set y2label "correct rate"
set y2range [0:1.05]
set ytics nomirror
set y2tics
set key below horizontal
plot f using "step":"mean_reward" with linespoints ls 1 title "mean reward (composite + judge)", \
     f using "step":"correct_rate" axes x1y2 with linespoints ls 2 dt 2 title "correct rate (right)"
unset multiplot

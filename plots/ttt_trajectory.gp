# TTT trajectories (surprisal report 5.3): ttt/ttt_tasks.csv (batch TTT on subset 1, per task) and
# ttt/ttt_steps.csv (aggregate), fast_1 per adaptation step.
load dir."/style.gp"
set title "Batch TTT on subset 1: fast_1 per step" noenhanced
set xlabel "TTT step"
set ylabel "fast_1 of the step's rollouts"
set yrange [0:1.05]
set key outside right
f = results."/ttt/ttt_tasks.csv"
g = results."/ttt/ttt_steps.csv"
plot for [t in "4 5 12 14 15"] f using 2:($3 == t+0 ? $6 : 1/0) with linespoints lw 1.5 title "task ".t, \
     g using 2:7 with linespoints ls 1 lw 3 title "aggregate"

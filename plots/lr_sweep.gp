# Learning-rate sweep (surprisal report 6.4): lr_sweep/lr_sweep_steps.csv, fast_1 per TTT step for
# each learning rate (the run column names it).
load dir."/style.gp"
set title "TTT learning-rate sweep (subset 1)" noenhanced
set xlabel "TTT step"
set ylabel "fast_1"
set yrange [0:1.05]
set key outside right
f = results."/lr_sweep/lr_sweep_steps.csv"
runs = system("tail -n +2 '".f."' | cut -d, -f1 | sort -u | tr '\\n' ' '")
plot for [r in runs] f using 2:(strcol(1) eq r ? $7 : 1/0) with linespoints lw 2 title r

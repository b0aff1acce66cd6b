# Ablations (self-improvement report 4.3): ablations/ablations.csv, BoA fast_1 against the ablated
# setting, one panel per ablation.
load dir."/style.gp"
set multiplot layout 1,3 title "TTT ablations (subset 1)" noenhanced
set ylabel "BoA fast_1"
set yrange [0:1.05]
unset key
f = results."/ablations/ablations.csv"
set xlabel "TTT steps"
plot f using ((strcol(2) eq "ttt_steps") ? $3 : 1/0):7 with linespoints ls 1
set xlabel "K (rollouts per task per step)"
set logscale x 2
plot f using ((strcol(2) eq "k") ? $3 : 1/0):7 with linespoints ls 2
unset logscale x
set xlabel "temperature"
plot f using ((strcol(2) eq "temperature") ? $3 : 1/0):7 with linespoints ls 3
unset multiplot

# Best-of-N scaling (surprisal report Table 5.1 / Figure 3): best_of_n/bon_scaling.csv, task success
# (a fast sample among K) against K, with the 95% bootstrap interval over tasks.
load dir."/style.gp"
set title "Best-of-N scaling" noenhanced
set xlabel "K (samples per task)"
set ylabel "task success (fast_1 among K)"
set logscale x 2
set yrange [0:1.05]
set key bottom right
f = results."/best_of_n/bon_scaling.csv"
plot f using 2:(strcol(1) eq "subset1" ? $3 : 1/0):5:6 with yerrorlines ls 1 title "subset 1", \
     f using 2:(strcol(1) eq "subset2" ? $3 : 1/0):5:6 with yerrorlines ls 2 title "subset 2"

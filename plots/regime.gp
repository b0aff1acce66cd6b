# Regime plot (surprisal report 5.4, Figure 5): robustness/robustness.csv, per task the base
# policy's coverage (step-0 fast_1) against BoA step 1 minus best-of-N fast_1.
load dir."/style.gp"
set title "Adaptation vs search by base coverage" noenhanced
set xlabel "base coverage (step-0 fast_1)"
set ylabel "BoA step 1 - best-of-N (fast_1)"
set xrange [-0.05:1.05]
set yrange [-1:1]
set xzeroaxis lt -1
set key top left
f = results."/robustness/robustness.csv"
plot f using 3:(strcol(1) eq "subset1" ? $9 : 1/0) with points ls 1 title "subset 1", \
     f using 3:(strcol(1) eq "subset2" ? $9 : 1/0) with points ls 2 title "subset 2"

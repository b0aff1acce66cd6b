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
# Columns by name: the committed results of older runs have no sig_ columns, so boa_minus_bon sits
# at another place there.
plot f using "base_fast_1":(strcol("subset") eq "subset1" ? column("boa_minus_bon") : 1/0) with points ls 1 title "subset 1", \
     f using "base_fast_1":(strcol("subset") eq "subset2" ? column("boa_minus_bon") : 1/0) with points ls 2 title "subset 2"

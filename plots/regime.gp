# Regime plot (surprisal report 5.4, Figure 5): robustness/robustness.csv, per task the base
# policy's coverage (step-0 fast_1) against BoA step 1 minus best-of-N fast_1, coloured by the
# report's regimes (base coverage below 30%, at least 30%), with the 30% line. The aggregate rows
# (task_id mean, mean_base_...) are not plotted.
load dir."/style.gp"
set title "Adaptation vs search by base coverage" noenhanced
set xlabel "base coverage (step-0 fast_1)"
set ylabel "BoA step 1 - best-of-N (fast_1)"
set xrange [-0.05:1.05]
set yrange [-1:1]
set xzeroaxis lt -1
set key top right
set arrow from 0.3, graph 0 to 0.3, graph 1 nohead dt 2 lc rgb "#555555"
set label "30% base coverage" at 0.31, graph 0.05 left font ",9"
f = results."/robustness/robustness.csv"
task(c) = strstrt(strcol("task_id"), "mean") == 0  # the per-task rows only
# Columns by name: the committed results of older runs have no sig_ columns, so boa_minus_bon sits
# at another place there.
plot f using "base_fast_1":(task(0) && column("base_fast_1") < 0.3 ? column("boa_minus_bon") : 1/0) \
       with points ls 1 title "base coverage < 30% (adaptation's regime)", \
     f using "base_fast_1":(task(0) && column("base_fast_1") >= 0.3 ? column("boa_minus_bon") : 1/0) \
       with points ls 2 title "base coverage >= 30% (search's regime)"

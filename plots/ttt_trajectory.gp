# TTT trajectories (surprisal report 5.3): ttt/ttt_tasks.csv (batch TTT on subset 1, per task) and
# ttt/ttt_steps.csv (aggregate: the step's rollouts, and where the run drew them, fresh samples of the
# same adapter that were never trained on), fast_1 per adaptation step. Rows of several series are
# interleaved in the CSVs, so each series is picked out with awk first (a 1/0 filter would leave
# points without their line).
load dir."/style.gp"
set title "Batch TTT on subset 1: fast_1 per step" noenhanced
set xlabel "TTT step"
set ylabel "fast_1 of the step's rollouts"
set yrange [0:1.05]
set key outside right
f = results."/ttt/ttt_tasks.csv"
g = results."/ttt/ttt_steps.csv"
rows(file, column, value) = sprintf("< awk -F, 'NR == 1 || $%d == \"%s\"' '%s'", column, value, file)
fresh = int(system(sprintf("awk -F, '$1 == \"batch_subset1_fresh\"' '%s' | wc -l", g)))
tasks_and_aggregate = 'for [t in "4 5 12 14 15"] rows(f, 3, t) using 2:6 with linespoints lw 1.5 title "task ".t, rows(g, 1, "batch_subset1") using 2:7 with linespoints ls 1 lw 3 title "aggregate"'
if (fresh > 0) {
  plot @tasks_and_aggregate, \
       rows(g, 1, "batch_subset1_fresh") using 2:7 with linespoints ls 2 lw 2 dt 2 title "aggregate, fresh samples"
} else {
  plot @tasks_and_aggregate
}

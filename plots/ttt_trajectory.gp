# TTT trajectories (surprisal report 5.3): ttt/ttt_tasks.csv (batch TTT on subset 1, per task) and
# ttt/ttt_steps.csv (aggregate: the step's rollouts, and where the run drew them, fresh samples of the
# same adapter that were never trained on), fast_1 per adaptation step. With several seeds
# (runs batch_subset1_seedN) the tasks are the first seed's and every seed has its aggregate line;
# results of one unnamed seed (run batch_subset1) draw the same way. Rows of several series are
# interleaved in the CSVs, so each series is picked out with awk first (a 1/0 filter would leave
# points without their line).
load dir."/style.gp"
set xlabel "TTT step"
set ylabel "fast_1 of the step's rollouts"
set yrange [0:1.05]
set key outside right
f = results."/ttt/ttt_tasks.csv"
g = results."/ttt/ttt_steps.csv"
batches = system(sprintf("awk -F, 'NR > 1 && $1 ~ /^batch_subset1(_seed[0-9]+)?$/ && !seen[$1]++ {printf \"%%s \", $1}' '%s'", g))
first = word(batches, 1)
label(run) = strlen(run) > 14 ? run[15:] : "one seed"  # batch_subset1_seed42 -> seed42
set title sprintf("Batch TTT on subset 1: fast_1 per step (tasks of %s)", label(first)) noenhanced
rows(file, column, value) = sprintf("< awk -F, 'NR == 1 || $%d == \"%s\"' '%s'", column, value, file)
task_rows(t) = sprintf("< awk -F, 'NR == 1 || ($1 == \"%s\" && $3 == \"%s\")' '%s'", first, t, f)
fresh = int(system(sprintf("awk -F, '$1 == \"%s_fresh\"' '%s' | wc -l", first, g)))
lines = 'for [t in "4 5 12 14 15"] task_rows(t) using 2:6 with linespoints lw 1.5 title "task ".t, for [i = 1:words(batches)] rows(g, 1, word(batches, i)) using 2:7 with linespoints ls 1 lw 3 dt i title "all tasks, ".label(word(batches, i))'
if (fresh > 0) {
  plot @lines, \
       rows(g, 1, first."_fresh") using 2:7 with linespoints ls 2 lw 2 dt 2 title "all tasks, fresh, ".label(first)
} else {
  plot @lines
}

# Ablations (self-improvement report 4.3): ablations/ablations.csv, BoA fast_1 against the ablated
# setting, one panel per ablation: solid, TTT on the five tasks together (batched); dashed, the mean
# over the tasks of TTT on each task alone (ablations_per_task.csv, the report's per-task protocol),
# drawn when the results have it (runs before it was added do not).
load dir."/style.gp"
set multiplot layout 1,3 title "TTT ablations (subset 1): batched (solid), per task, mean (dashed)" noenhanced
set ylabel "BoA fast_1"
set yrange [0:1.05]
unset key
f = results."/ablations/ablations.csv"
t = results."/ablations/"."ablations_per_task.csv"  # optional: not in render.sh's list of required CSVs
has_t = (system("test -s '".t."' && echo 1 || echo 0") eq "1")
# Per-task means: task_id "mean", method in column 3, value in 4, boa_fast_1 in 8.
mean_of(m) = has_t ? sprintf("< (head -n 1 '%s'; grep '^mean,' '%s' | grep ',%s,')", t, t, m) : f  # header kept: columnhead
per_task(m) = has_t ? sprintf("\"%s\" using 4:8 with linespoints ls 4 dt 2", mean_of(m)) : "NaN notitle"
set xlabel "TTT steps"
pt = per_task("ttt_steps")
plot f using ((strcol(2) eq "ttt_steps") ? $3 : 1/0):7 with linespoints ls 1, @pt
set xlabel "K (rollouts per task per step)"
set logscale x 2
pt = per_task("k")
plot f using ((strcol(2) eq "k") ? $3 : 1/0):7 with linespoints ls 2, @pt
unset logscale x
set xlabel "temperature"
pt = per_task("temperature")
plot f using ((strcol(2) eq "temperature") ? $3 : 1/0):7 with linespoints ls 3, @pt
unset multiplot

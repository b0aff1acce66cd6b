# The self-improvement report's Figure F3 (E5, its main result): the base policy (greedy, one sample)
# against best-of-N at K and per-task TTT at K per step (the BoA step), from the same RLVR checkpoint
# at one temperature: per_task_ttt/per_task_ttt_summary.csv. Left: fast_1, the share of a method's
# samples that are correct and faster than PyTorch; right: task success, the share of tasks whose
# best sample is (best-of-N's oracle pick; TTT's best at the BoA step). Means over the tasks of
# subset 1 (each task's mean over seeds); error bars: 95% bootstrap intervals over tasks.
load dir."/style.gp"
f = results."/per_task_ttt/per_task_ttt_summary.csv"
name(s) = s eq "base_greedy" ? "base (greedy)" : s eq "best_of_n" ? "best-of-N" : s eq "ttt_boa" ? "TTT (BoA step)" : s
colour(i) = i == 0 ? 0x999999 : i == 1 ? 0x2166ac : 0xd6604d
set multiplot layout 1,2 title "Best-of-N vs per-task test-time training at equal K (95% bootstrap intervals over tasks)"
set style fill solid 0.8 border -1
set boxwidth 0.6
set yrange [0:1.05]
set xrange [-0.6:2.6]
unset key
set ylabel "fraction"
set title "fast_1 (share of samples correct and faster)"
plot f every ::0::2 using 0:"fast_1":(colour($0)):xtic(name(strcol(1))) with boxes lc rgb variable, \
     f every ::0::2 using 0:"fast_1":"fast_1_low":"fast_1_high" with yerrorbars lc rgb "#333333" pt 0 lw 1.5
unset ylabel
set title "task success (best sample correct and faster)"
plot f every ::0::2 using 0:"task_success":(colour($0)):xtic(name(strcol(1))) with boxes lc rgb variable, \
     f every ::0::2 using 0:"task_success":"task_success_low":"task_success_high" with yerrorbars lc rgb "#333333" pt 0 lw 1.5
unset multiplot

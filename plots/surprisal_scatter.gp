# Per-sample scatter (surprisal report 5.2): best_of_n/samples.csv, each correct sample's surprisal
# per token against its speedup, one colour per task (ten distinct colours), circles for subset 1's
# tasks and squares for subset 2's.
load dir."/style.gp"
set title "Correct best-of-N samples: surprisal vs speedup" noenhanced
set xlabel "surprisal per token (nats)"
set ylabel "speedup over PyTorch (x)"
set logscale y
set key outside right
f = results."/best_of_n/samples.csv"
tasks = "4 5 12 14 15 18 28 29 30 32"  # subset 1, then subset 2
colors = "#1f77b4 #ff7f0e #2ca02c #d62728 #9467bd #8c564b #e377c2 #7f7f7f #bcbd22 #17becf"
task(i) = word(tasks, i) + 0
plot for [i=1:words(tasks)] f \
     using ($12 == 1 && $3 == task(i) ? $8/$9 : 1/0):($12 == 1 && $3 == task(i) ? $13 : 1/0) \
     with points pt (i <= 5 ? 7 : 5) ps 0.8 lc rgb word(colors, i) title sprintf("task %d", task(i))

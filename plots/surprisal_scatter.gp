# Per-sample scatter (surprisal report 5.2): best_of_n/samples.csv, each correct sample's surprisal
# per token against its speedup, coloured by task.
load dir."/style.gp"
set title "Correct best-of-N samples: surprisal vs speedup" noenhanced
set xlabel "surprisal per token (nats)"
set ylabel "speedup (x)"
set logscale y
set key outside right
f = results."/best_of_n/samples.csv"
plot for [t in "4 5 12 14 15 18 28 29 30 32"] f using ($12 == 1 && $3 == t+0 ? $8/$9 : 1/0):($12 == 1 && $3 == t+0 ? $13 : 1/0) \
     with points pt 7 ps 0.8 title "task ".t

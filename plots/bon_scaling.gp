# Best-of-N scaling (surprisal report Table 5.1 / Figure 3): best_of_n/bon_scaling.csv, task success
# (a fast sample among K) against K, with the 95% bootstrap interval over tasks; the two subsets are
# drawn a little apart in K so that their intervals do not hide each other. When the ttt experiment
# ran too, its Best-of-Adaptation result on subset 1 (ttt/equal_budget.csv, the mean over seeds) is the dashed line, as in
# the report's figure.
load dir."/style.gp"
set title "Best-of-N scaling" noenhanced
set xlabel "K (samples per task)"
set ylabel "task success (fast_1 among K)"
set logscale x 2
set yrange [0:1.05]
set key bottom right
f = results."/best_of_n/bon_scaling.csv"
# An optional input: its path is built in two parts, since plots/render.sh requires every CSV a script
# names in one string.
ttt = results."/ttt/"."equal_budget.csv"
has_ttt = system("test -s '".ttt."' && echo 1 || echo 0") + 0
boa = NaN
if (has_ttt) {
  # The mean over seeds where the results have it, else the one seed's row.
  boa = real(system("awk -F, 'NR > 1 && $2 == \"ttt_boa_mean\" {m = $4} NR > 1 && $2 ~ /^ttt_boa_step/ && s == \"\" {s = $4} END {print (m != \"\" ? m : s)}' '".ttt."'"))
}
boa_title = has_ttt ? sprintf("TTT, Best-of-Adaptation, subset 1, mean over seeds (%.2f)", boa) : ""
plot f using ($2*0.96):(strcol(1) eq "subset1" ? $3 : 1/0):5:6 with yerrorlines ls 1 title "subset 1", \
     f using ($2*1.04):(strcol(1) eq "subset2" ? $3 : 1/0):5:6 with yerrorlines ls 2 title "subset 2", \
     (has_ttt ? boa : 1/0) with lines dt 2 lw 1.5 lc rgb "#1b9e77" title boa_title

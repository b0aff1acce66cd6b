# The surprisal report's 6.7 open question, run: does the best TTT step move later as the reward gets
# sparser? sparsification/sparsification.csv, the mean rows over seeds: per training reward (the
# dense gated speedup, then threshold:T = 1 above T times the reference's speed), the mean
# Best-of-Adaptation step (bars, left) and the share of step-0 rollouts with a non-zero reward
# (points, right: how sparse the reward is).
load dir."/style.gp"
f = results."/sparsification/sparsification.csv"
set title "Reward sparsification: the best TTT step (BoA) per training reward"
set style fill solid 0.8 border -1
set boxwidth 0.6
set ylabel "mean BoA step"
set y2label "step-0 rollouts with reward > 0"
set y2range [0:1.05]
set ytics nomirror
set y2tics
set key below horizontal
set datafile columnheaders  # the header row, then the mean rows; columns by name
m = "< (head -n 1 '".f."'; grep ',mean,' '".f."')"
stats m using (column("boa_step")) nooutput
set yrange [0:(STATS_max > 0 ? 1.15 * STATS_max : 1)]
set key noautotitle
plot m using 0:(column("boa_step")):xtic(1) with boxes ls 1 title "mean BoA step", \
     m using 0:(column("step0_reward_density")) axes x1y2 with points ls 2 pt 7 ps 2 \
       title "reward density at step 0 (right)"

# Over-sharpening probe (surprisal report 5.3b): oversharpening/rho_trajectory.csv, Spearman rho
# between a fixed sample set's NLL under each TTT step's adapter and the samples' speedups.
load dir."/style.gp"
set title "rho(NLL, speedup) across TTT steps" noenhanced
set xlabel "TTT step"
set ylabel "Spearman rho"
set yrange [-1:1]
set key bottom left
f = results."/oversharpening/rho_trajectory.csv"
plot f using 1:3 with linespoints ls 1 title "all samples", \
     f using 1:6 with linespoints ls 2 title "highest-NLL quartile"

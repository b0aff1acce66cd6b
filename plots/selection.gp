# Selection strategies (surprisal report Table 5.3): selection/selection.csv, fast_1 of each strategy
# with its standard deviation over seeds; one panel per subset (rows 1-5 subset 1, 6-10 subset 2,
# in the order selection.cpp writes them).
load dir."/style.gp"
set multiplot layout 1,2 title "Selection among K samples per task"
set ylabel "fast_1 of the selected sample"
set yrange [0:1.1]
set style data histograms
set style histogram errorbars gap 1 lw 1
set style fill solid 0.8 border -1
set boxwidth 0.8
set xtics rotate by -30 font ",10"
unset key
f = results."/selection/selection.csv"
set title "subset 1"
plot f every ::0::4 using 3:4:xtic(2) ls 1
set title "subset 2"
unset ylabel
plot f every ::5::9 using 3:4:xtic(2) ls 2
unset multiplot

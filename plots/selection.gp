# Selection strategies (surprisal report Table 5.3 and Figure 4): selection/selection.csv. Top row:
# fast_1 of the selected sample (the share of tasks whose pick is correct and faster than PyTorch),
# with its standard deviation over seeds; bottom row: the pick's mean speedup (Figure 4's second
# panel). One column per subset (rows 1-5 subset 1, 6-10 subset 2, in the order selection.cpp
# writes them).
height = 900
load dir."/style.gp"
name(s) = s eq "best_correct_oracle" ? "oracle (best correct)" : \
          s eq "surprisal_guided_top3" ? "surprisal top-3" : \
          s eq "surprisal_guided" ? "surprisal-guided" : \
          s eq "random_correct" ? "random correct" : \
          s eq "confidence_guided" ? "confidence-guided" : s
set multiplot layout 2,2 title "Selecting one of K samples per task (fast_1: correct and faster than PyTorch)"
set style fill solid 0.8 border -1
set boxwidth 0.8
set xtics rotate by -30 font ",9"
unset key
f = results."/selection/selection.csv"
set style data histograms
set style histogram errorbars gap 1 lw 1
set yrange [0:1.1]
set ylabel "fast_1 of the pick"
set title "subset 1"
plot f every ::0::4 using 3:4:xtic(name(strcol(2))) ls 1
set title "subset 2"
unset ylabel
plot f every ::5::9 using 3:4:xtic(name(strcol(2))) ls 2
set style histogram clustered gap 1
set yrange [0:*]
set ylabel "mean speedup of the pick (x)"
unset title
plot f every ::0::4 using "mean_speedup":xtic(name(strcol(2))) ls 1
unset ylabel
plot f every ::5::9 using "mean_speedup":xtic(name(strcol(2))) ls 2
unset multiplot

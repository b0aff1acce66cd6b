# The surprisal report's 6.7 open question, run: does an entropy bonus in TTT's objective prevent
# over-sharpening? entropy_ttt/entropy_rho.csv: rho(NLL, speedup) of the fixed sample set (best-of-N's
# seed-42 subset-1 samples) under each TTT step's adapter, one line per entropy coefficient (0 =
# vanilla GRPO, 5.3b's probe); solid: all samples, dashed: the highest-NLL quartile (the tail where
# surprisal-guided selection picks). A rho falling below 0 is the over-sharpening of 5.3b.
load dir."/style.gp"
f = results."/entropy_ttt/entropy_rho.csv"
coefs = system("tail -n +2 '".f."' | cut -d, -f1 | sort -gu | tr '\\n' ' '")
set title "Entropy-regularized TTT: rho(NLL, speedup) per step"
set xlabel "TTT step"
set ylabel "Spearman rho(NLL, speedup)"
set yrange [-1:1]
set key below horizontal maxcols 3 font ",10"
plot for [i=1:words(coefs)] f using (strcol(1) eq word(coefs, i) ? $2 : NaN):"rho" with linespoints ls i \
       title "entropy coef ".word(coefs, i)." (all)", \
     for [i=1:words(coefs)] f using (strcol(1) eq word(coefs, i) ? $2 : NaN):"tail_rho" with linespoints ls i dt 2 \
       title "entropy coef ".word(coefs, i)." (tail)", \
     0 with lines lc rgb "#999999" dt 3 notitle

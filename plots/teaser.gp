# The surprisal report's Figure 1 (teaser): test-time strategies on subset 1 side by side. TTT (red):
# fast_1 of the samples at the Best-of-Adaptation step, the mean over seeds with its standard
# deviation (ttt/equal_budget.csv's ttt_boa_mean; the ttt_boa_step row in results of one seed); the selection
# strategies over best-of-N's K samples (selection/selection.csv, subset 1): fast_1 of the pick,
# with its standard deviation over seeds. Surprisal-guided picks in blue, the others grey. fast_1:
# correct and faster than PyTorch.
load dir."/style.gp"
s = results."/selection/selection.csv"
t = results."/ttt/equal_budget.csv"
name(x) = x eq "best_correct_oracle" ? "oracle" : \
          x eq "surprisal_guided_top3" ? "surprisal top-3" : \
          x eq "surprisal_guided" ? "surprisal-guided" : \
          x eq "random_correct" ? "random correct" : \
          x eq "confidence_guided" ? "confidence-guided" : x
colour(x) = strstrt(x, "surprisal") == 1 ? 0x2166ac : 0x999999
set title "Test-time strategies for kernel optimization (subset 1; fast_1: correct and faster than PyTorch)"
set style fill solid 0.8 border -1
set boxwidth 0.6
set yrange [0:1.1]
set xrange [-0.6:5.6]
set ylabel "fast_1"
set xtics ("TTT (BoA step)" 0) rotate by -30 font ",10"
unset key
has_mean = system(sprintf("awk -F, '$2 == \"ttt_boa_mean\"' '%s' | wc -l", t)) + 0
boa(m) = has_mean ? m eq "ttt_boa_mean" : strstrt(m, "ttt_boa_step") == 1
strategies = 's every ::0::4 using ($0 + 1):"fast_1":(colour(strcol(2))):xtic(name(strcol(2))) with boxes lc rgb variable, s every ::0::4 using ($0 + 1):"fast_1":"std" with yerrorbars lc rgb "#333333" pt 0 lw 1.5'
if (has_mean) {
  plot t using (boa(strcol(2)) ? 0 : NaN):"fast_1" with boxes lc rgb "#d6604d", \
       t using (boa(strcol(2)) ? 0 : NaN):"fast_1":"std_over_seeds" with yerrorbars lc rgb "#333333" pt 0 lw 1.5, \
       @strategies
} else {
  plot t using (boa(strcol(2)) ? 0 : NaN):"fast_1" with boxes lc rgb "#d6604d", @strategies
}

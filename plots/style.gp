# Shared by every figure: the terminal (fmt = "png" or "svg", out = the file without extension),
# CSV input with a header row, and one palette. Scripts read CSV only (results = a budget's results dir).
if (!exists("fmt")) fmt = "png"
if (!exists("height")) height = 560  # a script with several rows of panels sets it before loading this
if (fmt eq "svg") { set terminal svg size 900,height dynamic font "Helvetica,13" } else { set terminal pngcairo size 900,height font "Helvetica,12" }
set output out.".".fmt
set datafile separator ","
set datafile missing "nan"
set key autotitle columnhead
set grid lc rgb "#dddddd"
set border lc rgb "#555555"
set style line 1 lc rgb "#1b9e77" lw 2 pt 7 ps 1.1
set style line 2 lc rgb "#d95f02" lw 2 pt 5 ps 1.1
set style line 3 lc rgb "#7570b3" lw 2 pt 9 ps 1.1
set style line 4 lc rgb "#e7298a" lw 2 pt 11 ps 1.1
set style line 5 lc rgb "#66a61e" lw 2 pt 13 ps 1.1
set style line 6 lc rgb "#e6ab02" lw 2 pt 3 ps 1.1
set termoption noenhanced

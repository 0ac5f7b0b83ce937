# reports/interactivity.gp: throughput against interactivity for one serving workload:
# output tokens/s per chip (y) against output tokens/s per user (x), one line per target
# through its batch sweep, each point labelled with its cost per million output tokens.
# Each target has its own colour, dash type and point shape, so the chart reads in
# black and white.
#
# gnuplot -c reports/interactivity.gp DATA OUTPUT FORMAT TITLE TARGETS
#   DATA     tab-separated, no header: tokens/s per user, tokens/s per chip, cost label
#            ("" for an unpriced target), batch; one block per target, blocks separated
#            by two blank lines
#   OUTPUT   the file to write
#   FORMAT   svg or png (png needs the pngcairo terminal)
#   TITLE    chart title (what, for which workload)
#   TARGETS  the targets of the blocks, space-separated, in block order

if (ARGC < 5) {
    print "usage: gnuplot -c interactivity.gp DATA OUTPUT FORMAT TITLE TARGETS"
    exit status 2
}
data = ARG1
targets = ARG5
if (ARG3 eq "svg") {
    set terminal svg size 800,560 enhanced font "Helvetica,13" background rgb "white"
} else {
    if (ARG3 eq "png") {
        set terminal pngcairo size 800,560 enhanced font "Helvetica,11" background rgb "white"
    } else {
        print sprintf("unknown format '%s' (svg or png)", ARG3)
        exit status 2
    }
}
set output ARG2
set datafile separator "\t"

# Okabe-Ito colours, one dash type and one point shape per target
set linetype 1 lc rgb "#0072B2" lw 2 dt 1 pt 7 ps 1.1
set linetype 2 lc rgb "#D55E00" lw 2 dt 2 pt 5 ps 1.1
set linetype 3 lc rgb "#009E73" lw 2 dt 3 pt 9 ps 1.3
set linetype 4 lc rgb "#CC79A7" lw 2 dt 4 pt 13 ps 1.3
set linetype 5 lc rgb "#56B4E9" lw 2 dt 5 pt 6 ps 1.1
set linetype 6 lc rgb "#E69F00" lw 2 dt 6 pt 4 ps 1.1
set linetype 7 lc rgb "#000000" lw 2 dt 7 pt 8 ps 1.3
set linetype 8 lc rgb "#999999" lw 2 dt 8 pt 12 ps 1.3
set linetype cycle 8

# the title centred on the whole canvas (the legend takes the right)
set label 1 ARG4 at screen 0.5, screen 0.965 center font ",15" noenhanced
set tmargin at screen 0.9
set xlabel "output tokens/s per user (interactivity), log scale"
set ylabel "output tokens/s per chip, log scale"
set logscale xy
set grid xtics ytics lc rgb "#d0d0d0" dt 3
set border 3
set xtics nomirror
set ytics nomirror
set key outside right top vertical noenhanced title "target" box lc rgb "#d0d0d0"

ntargets = words(targets)
plot for [i = 1:ntargets] data index (i - 1) using 1:2 with linespoints lt i title word(targets, i), \
     for [i = 1:ntargets] data index (i - 1) using 1:2:3 with labels offset character 0.5, 0.6 \
        left font ",9" tc lt i notitle

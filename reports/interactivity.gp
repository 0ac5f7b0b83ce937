# reports/interactivity.gp: throughput against interactivity for one serving workload:
# output tokens/s per chip (y) against output tokens/s per user (x), one line per target
# through its batch sweep, each point labelled with its cost per million output tokens.
# A line has its target's colour (the same in every chart of the report) and its own
# dash type and point shape, so the chart reads in black and white. The labels are put
# where the report placed them (no two overlap), so the frame and the axes' ranges are
# given, not chosen here.
#
# gnuplot -c reports/interactivity.gp DATA OUTPUT FORMAT TITLE TARGETS COLOURS HEIGHT FRAME RANGE
#   DATA     tab-separated, no header: tokens/s per user, tokens/s per chip, cost label
#            ("" for an unpriced target), batch, and where the label goes (x, y in data
#            coordinates: its left edge and vertical centre; NaN NaN: left out); one
#            block per line, blocks separated by two blank lines
#   OUTPUT   the file to write
#   FORMAT   svg or png (png needs the pngcairo terminal)
#   TITLE    chart title (what, for which workload)
#   TARGETS  the blocks' names, space-separated, in block order (the key)
#   COLOURS  one colour ("#RRGGBB") per block, space-separated
#   HEIGHT   the canvas's height in pixels (its width is 800)
#   FRAME    the plot area in pixels from the top left: "LEFT RIGHT TOP BOTTOM"
#   RANGE    the axes as powers of ten: "X0 X1 Y0 Y1" (x from 10^X0 to 10^X1)

if (ARGC < 9) {
    print "usage: gnuplot -c interactivity.gp DATA OUTPUT FORMAT TITLE TARGETS COLOURS HEIGHT FRAME RANGE"
    exit status 2
}
data = ARG1
targets = ARG5
colours = ARG6
height = int(ARG7)
frame = ARG8
range = ARG9
if (words(targets) != words(colours) || words(frame) != 4 || words(range) != 4) {
    print "TARGETS and COLOURS: one word per line each; FRAME and RANGE: four numbers each"
    exit status 2
}
if (ARG3 eq "svg") {
    set terminal svg size 800,height enhanced font "Helvetica,13" background rgb "white"
} else {
    if (ARG3 eq "png") {
        set terminal pngcairo size 800,height enhanced font "Helvetica,11" background rgb "white"
    } else {
        print sprintf("unknown format '%s' (svg or png)", ARG3)
        exit status 2
    }
}
set output ARG2
set datafile separator "\t"

# one dash type and one point shape per line; the colour comes from COLOURS
set linetype 1 lw 2 dt 1 pt 7 ps 1.1
set linetype 2 lw 2 dt 2 pt 5 ps 1.1
set linetype 3 lw 2 dt 3 pt 9 ps 1.3
set linetype 4 lw 2 dt 4 pt 13 ps 1.3
set linetype 5 lw 2 dt 5 pt 6 ps 1.1
set linetype 6 lw 2 dt 6 pt 4 ps 1.1
set linetype 7 lw 2 dt 7 pt 8 ps 1.3
set linetype 8 lw 2 dt 8 pt 12 ps 1.3
set linetype cycle 8

set lmargin at screen (word(frame, 1) + 0.0) / 800
set rmargin at screen (word(frame, 2) + 0.0) / 800
set tmargin at screen 1 - (word(frame, 3) + 0.0) / height
set bmargin at screen 1 - (word(frame, 4) + 0.0) / height
set xrange [10.0 ** (word(range, 1) + 0) : 10.0 ** (word(range, 2) + 0)]
set yrange [10.0 ** (word(range, 3) + 0) : 10.0 ** (word(range, 4) + 0)]

# the title centred on the whole canvas; the key under the x label, two lines a row
set label 1 ARG4 at screen 0.5, screen 1 - 24.0 / height center font ",15" noenhanced
set xlabel "output tokens/s per user (interactivity), log scale"
set ylabel "output tokens/s per chip, log scale"
set logscale xy
set format x "%g"
set format y "%g"
set grid xtics ytics lc rgb "#d0d0d0" dt 3
set border 3
set xtics nomirror
set ytics nomirror
set key at screen 0.5, screen 6.0 / height center bottom horizontal maxcols 2 noenhanced \
    font ",11"

ntargets = words(targets)
plot for [i = 1:ntargets] data index (i - 1) using 1:2 with linespoints lt i \
        lc rgb word(colours, i) title word(targets, i), \
     for [i = 1:ntargets] data index (i - 1) using 5:6:3 with labels left \
        font ",10" tc rgb word(colours, i) notitle

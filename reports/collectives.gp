# reports/collectives.gp: measured collectives against the performance model on one link:
# bus bandwidth (GB/s, y, log) against the size (bytes, x, log), each collective's
# measured points and the model's line in one colour (the line dashed), so the gap
# between them is the model's error at each size.
#
# gnuplot -c reports/collectives.gp DATA OUTPUT FORMAT TITLE NAMES
#   DATA    tab-separated, no header: bytes, measured busbw, modeled busbw (NaN: not
#           modeled); one block per collective, blocks separated by two blank lines
#   OUTPUT  the file to write
#   FORMAT  svg or png (png needs the pngcairo terminal)
#   TITLE   chart title
#   NAMES   the blocks' names, space-separated, in block order (the key)

if (ARGC < 5) {
    print "usage: gnuplot -c collectives.gp DATA OUTPUT FORMAT TITLE NAMES"
    exit status 2
}
data = ARG1
names = ARG5
if (ARG3 eq "svg") {
    set terminal svg size 800,500 enhanced font "Helvetica,13" background rgb "white"
} else {
    if (ARG3 eq "png") {
        set terminal pngcairo size 800,500 enhanced font "Helvetica,11" background rgb "white"
    } else {
        print sprintf("unknown format '%s' (svg or png)", ARG3)
        exit status 2
    }
}
set output ARG2
set datafile separator "\t"
set datafile missing "NaN"

colours = "#0072B2 #D55E00 #009E73 #CC79A7 #E69F00 #56B4E9 #000000 #888888"
set title ARG4 noenhanced
set logscale xy
set format x "%.0b%B"
set format y "10^{%T}"
set xlabel "size (bytes; the whole buffer, as nccl-tests counts it)"
set ylabel "bus bandwidth (GB/s)"
set grid xtics ytics lc rgb "#dddddd"
set key outside right top noenhanced
set xtics 16 font ",11"
set mxtics 1

plot for [i=1:words(names)] data index (i - 1) using 1:2 with points pt 7 ps 0.9 \
         lc rgb word(colours, (i - 1) % 8 + 1) title word(names, i) . " measured", \
     for [i=1:words(names)] data index (i - 1) using 1:3 with lines lw 2 dt 2 \
         lc rgb word(colours, (i - 1) % 8 + 1) title word(names, i) . " modeled"

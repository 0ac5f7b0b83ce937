# reports/hbars.gp: the horizontal bar chart shared by throughput.gp and cost.gp, loaded
# by them after they set xlabel_text, nargs and arg1..arg9 (their ARGC and ARG1..ARG9:
# `load` does not pass arguments on). See throughput.gp for what each argument is.

if (nargs < 5) {
    print "usage: gnuplot -c SCRIPT DATA OUTPUT FORMAT TITLE GROUPS [HEIGHT] [SCALE] [TARGETS COLOURS]"
    exit status 2
}
data    = arg1
groups  = arg5
height  = (nargs >= 6 && arg6 ne "") ? int(arg6) : 450
scale   = (nargs >= 7 && arg7 ne "") ? arg7 : "linear"
targets = (nargs >= 9) ? arg8 : ""
colours = (nargs >= 9) ? arg9 : ""
if (words(targets) != words(colours)) {
    print sprintf("TARGETS has %d words, COLOURS %d: one colour per target", words(targets), words(colours))
    exit status 2
}

if (arg3 eq "svg") {
    set terminal svg size 800,height enhanced font "Helvetica,13" background rgb "white"
} else {
    if (arg3 eq "png") {
        set terminal pngcairo size 800,height enhanced font "Helvetica,11" background rgb "white"
    } else {
        print sprintf("unknown format '%s' (svg or png)", arg3)
        exit status 2
    }
}
set output arg2

set datafile separator "\t"
# A bar's colour is its target's (TARGETS and COLOURS, one colour per target: the report
# gives each target family, the chip of its instance type, one colour-blind-safe hue in
# every chart of every report, AWS's chips cool and NVIDIA's warm, and two targets of one
# family shades of it), its fill pattern its group's, so the chart also reads in black
# and white. Without TARGETS (a chart drawn by hand) every bar is one blue.
pattern(i) = word("2 4 1 5 6 7", (i - 1) % 6 + 1) + 0
if (targets eq "") {
    targets = "-"
    colours = "#0072B2"
    keyed = 0
} else {
    keyed = 1
}

stats data using 3 nooutput
nrows = STATS_records
vmin  = STATS_min
stats data using (valid(5) ? $5 : $3) nooutput
vmax  = STATS_max

# the title centred on the whole canvas, not on the plot area (the labels take the left)
set label 1 arg4 at screen 0.5, screen 1 - 22.0 / height center font ",15" noenhanced
set tmargin at screen 1 - 48.0 / height
# the x label centred on the canvas too: centred on the plot area (right of the labels) a
# long one ran off the canvas's right edge; it sits under the tic labels, above the key
set label 2 xlabel_text . ((scale eq "log") ? ", log scale" : "") noenhanced center \
    at screen 0.5, screen (72.0 + 20.0 * int((words(groups) + keyed * words(targets) + 2) / 3) - 44.0) / height
set ytics nomirror noenhanced scale 0 font ",11"
set xtics nomirror
set border 3
set grid xtics lc rgb "#d0d0d0" dt 3
set yrange [nrows - 0.5 : -0.5]
# the legend under the x label, at most 3 entries a row (the targets' colours, then the
# groups' patterns); the bottom margin grows with its rows
ngroups = words(groups)
ntargets = words(targets)
keyrows = int((ngroups + keyed * ntargets + 2) / 3)
set key at screen 0.5, screen 8.0 / height center bottom horizontal maxcols 3 noenhanced
set bmargin at screen (72.0 + 20.0 * keyrows) / height
set offsets 0, 0, 0, 0
if (scale eq "log") {
    set logscale x
    base = 10 ** floor(log10(vmin))
    set xrange [base : vmax * 8]
} else {
    base = 0
    set xrange [0 : vmax * 1.3]
}
# large values with an SI prefix on the axis (2.5M, not 2.5x10^6)
if (vmax >= 1e5) {
    set format x "%.1s%c"
}
set style fill pattern border
# a reference value (1 for price-performance) as a dashed vertical line
if (exists("refline")) {
    set arrow 1 from refline, graph 0 to refline, graph 1 nohead dt 2 lw 1.5 lc rgb "#333333" front
}

# position of group s in the groups list (1-based), 0 when absent; of target s likewise
# (every bar the one colour when there is no TARGETS; 0 for a target not listed)
grp(s) = sum [k = 1:words(groups)] ((word(groups, k) eq s) ? k : 0)
tgt(s) = keyed ? sum [k = 1:words(targets)] ((word(targets, k) eq s) ? k : 0) : 1
bar(t, i) = (grp(strcol(2)) == i && tgt(strcol(7)) == t) ? $3 : NaN
# a target's colour; grey for a bar whose target the key does not list (t = 0)
colour(t) = t ? word(colours, t) : "#888888"
label_of(v) = (v >= 1000) ? sprintf("%.0f", v) : sprintf("%.3g", v)

# a bar: a light tint of its target's colour under its group's pattern in that colour
plot data using (0):0:ytic(strcol(1) . "\n" . strcol(6)) with points pt -1 notitle, \
     for [t = 0:ntargets] for [i = 1:ngroups] data \
        using (bar(t, i)):0:(base):(bar(t, i)):($0 - 0.32):($0 + 0.32) \
        with boxxyerror fs solid 0.3 noborder fc rgb colour(t) notitle, \
     for [t = 0:ntargets] for [i = 1:ngroups] data \
        using (bar(t, i)):0:(base):(bar(t, i)):($0 - 0.32):($0 + 0.32) \
        with boxxyerror fs transparent pattern pattern(i) border lc rgb colour(t) \
        fc rgb colour(t) \
        lw 1.5 notitle, \
     for [t = 1:keyed * ntargets] keyentry with boxes fs solid 1.0 noborder \
        lc rgb word(colours, t) title word(targets, t), \
     for [i = 1:ngroups] keyentry with boxes fs pattern pattern(i) border lc rgb "#444444" \
        fc rgb "#444444" title word(groups, i), \
     data using 3:0:4:5 with xerrorbars lc rgb "#333333" lw 1 dt solid pt -1 notitle, \
     data using ((valid(5) ? $5 : $3)):0:(label_of($3)) with labels left offset character 0.6, 0 font ",11" notitle

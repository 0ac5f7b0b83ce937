# reports/throughput.gp: throughput of each run (tokens/s) as horizontal bars in its
# target's colour, one fill pattern per phase (readable in colour and in black and
# white), with the min-max spread of the timed repetitions as an error bar and the
# median printed at the end of each bar. Static: everything varies through the arguments.
#
# gnuplot -c reports/throughput.gp DATA OUTPUT FORMAT TITLE GROUPS [HEIGHT] [SCALE] [TARGETS COLOURS]
#   DATA    tab-separated, no header: label, group, value, min, max ("NaN" when
#           unknown), second label line, target; rows of one group together, first row
#           at the top
#   OUTPUT  the file to write
#   FORMAT  svg or png (png needs the pngcairo terminal)
#   TITLE   chart title (what, for which workload)
#   GROUPS  the groups present, space-separated, in legend order (e.g. "prefill decode")
#   HEIGHT  pixels (default 450); SCALE linear or log (default linear)
#   TARGETS the targets of the bars, space-separated, in legend order, and COLOURS one
#           colour ("#RRGGBB") for each: a bar takes its target's colour (its group's
#           fill pattern); without them every bar is one blue and the legend lists
#           the groups only

xlabel_text = "tokens/s (median; whisker: min-max)"
nargs = ARGC
arg1 = ARG1; arg2 = ARG2; arg3 = ARG3; arg4 = ARG4; arg5 = ARG5; arg6 = ARG6; arg7 = ARG7
arg8 = ARG8; arg9 = ARG9
load ARG0[1:strstrt(ARG0, "throughput.gp") - 1] . "hbars.gp"

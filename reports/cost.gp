# reports/cost.gp: cost per million tokens of each priced run as horizontal bars in its
# target's colour, one fill pattern per cost metric (usd_per_mtok_in, _out, _train),
# whisker from the throughput spread. Arguments as for reports/throughput.gp:
#
# gnuplot -c reports/cost.gp DATA OUTPUT FORMAT TITLE GROUPS [HEIGHT] [SCALE] [TARGETS COLOURS]

xlabel_text = "USD per million tokens (whisker: min-max)"
nargs = ARGC
arg1 = ARG1; arg2 = ARG2; arg3 = ARG3; arg4 = ARG4; arg5 = ARG5; arg6 = ARG6; arg7 = ARG7
arg8 = ARG8; arg9 = ARG9
load ARG0[1:strstrt(ARG0, "cost.gp") - 1] . "hbars.gp"

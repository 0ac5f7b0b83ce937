# reports/priceperf.gp: price-performance of each target against the baseline instance
# type (its cost over the target's, per workload) as horizontal bars in the target's
# colour, one fill pattern per model and phase, a dashed line at 1 (the baseline).
# Arguments as for reports/throughput.gp.
#
# gnuplot -c reports/priceperf.gp DATA OUTPUT FORMAT TITLE GROUPS [HEIGHT] [SCALE] [TARGETS COLOURS]

xlabel_text = "price-performance (x baseline; 2 = half its cost)"
refline = 1
nargs = ARGC
arg1 = ARG1; arg2 = ARG2; arg3 = ARG3; arg4 = ARG4; arg5 = ARG5; arg6 = ARG6; arg7 = ARG7
arg8 = ARG8; arg9 = ARG9
load ARG0[1:strstrt(ARG0, "priceperf.gp") - 1] . "hbars.gp"

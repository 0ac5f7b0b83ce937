# reports/train.gp: the cost in USD to train on N tokens at each training run's
# throughput and price, as horizontal bars in the target's colour, one fill pattern per
# model; the second label line gives the days it takes. Arguments as for reports/throughput.gp.
#
# gnuplot -c reports/train.gp DATA OUTPUT FORMAT TITLE GROUPS [HEIGHT] [SCALE] [TARGETS COLOURS]

xlabel_text = "USD to train on the stated number of tokens"
nargs = ARGC
arg1 = ARG1; arg2 = ARG2; arg3 = ARG3; arg4 = ARG4; arg5 = ARG5; arg6 = ARG6; arg7 = ARG7
arg8 = ARG8; arg9 = ARG9
load ARG0[1:strstrt(ARG0, "train.gp") - 1] . "hbars.gp"

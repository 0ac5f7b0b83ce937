#!/bin/sh
# tests/cli/perf-regime.t: `trnbench perf --regime`, the serving regimes against the real
# `trnbench serve --engine cpu` on the loopback: step costs from calibration bursts, the
# regime solver's TTFT/TPOT/throughput at concurrency 1 and 8, the load client's
# measurement of the same. Only robust facts are asserted (a loaded 2-core machine moves
# every figure): both TTFT columns rise from 1 to 8 in flight, each TTFT prediction is
# within a generous factor (20) of the measurement, the TPOT at 8 within 6. Refused
# options exit 2. Needs TB_BIN, TB_SRCDIR and TB_BUILDDIR (make check sets them).

. "${TB_SRCDIR:-.}/tests/cli/tap.sh"
tmp="$TB_BUILDDIR/tests/tmp/cli_perf_regime"
rm -rf "$tmp" && mkdir -p "$tmp"

echo "1..13"

"$TB_BIN" perf --regime --concurrency 4,2 >/dev/null 2>"$tmp/opt.err"
check "--concurrency 4,2 (not increasing) refused with exit 2" test $? -eq 2
check "the message names --concurrency" grep -q -- "--concurrency" "$tmp/opt.err"
# `perf-regime` is the command, `perf --regime` its alias: the same refusal, each in its
# own name
"$TB_BIN" perf-regime --concurrency 4,2 >/dev/null 2>"$tmp/new.err"
check "perf-regime --concurrency 4,2: exit 2 as the alias" test $? -eq 2
check "  the alias's message, in the name perf-regime" \
    sh -c 'sed "s/^trnbench perf:/trnbench perf-regime:/" "$1" | cmp -s - "$2" && grep -q "^trnbench perf-regime: " "$2"' \
    sh "$tmp/opt.err" "$tmp/new.err"

regime() {
    TMPDIR="$tmp" "$TB_BIN" perf --regime --model llama-small --seq-in 64 --seq-out 32 \
        --concurrency 1,8 --requests 24 >"$tmp/out" 2>"$tmp/err"
}
# within20: every TTFT prediction within a factor of 20 of its measurement
within20() {
    awk '$1 ~ /^[0-9]+$/ && NF == 10 { if (!($2 > 0 && $3 > 0 && $2 / $3 < 20 && $3 / $2 < 20)) bad = 1 } END { exit bad }' "$tmp/out"
}
regime
rc=$?
# A burst of other work on the machine during the calibration bursts (seen: a lone
# prefill of 216 ms and decode steps of 84 ms, then levels of 3 ms) moves the step
# costs 30x: such a run is done once more, and said, before anything is asserted
if [ $rc -eq 0 ] && ! within20; then
    echo "# the step costs were off by over 20x (a busy machine?); measured once more:" >&2
    sed -n '2,5s/^/#   /p' "$tmp/out" >&2
    regime
    rc=$?
fi
check "perf --regime ran against trnbench serve (exit 0)" test $rc -eq 0
check "the step costs come from bursts against the server" \
    grep -q "^step costs from bursts against it (medians): prefill [0-9.]* ms" "$tmp/out"
# rows: N  TTFT pred meas err%  TPOT pred meas err%  tok/s pred meas err%
row() { awk -v n="$1" '$1 == n && NF == 10' "$tmp/out"; }
check "a row for concurrency 1 and one for 8" test -n "$(row 1)" -a -n "$(row 8)"
check "predicted TTFT rises from 1 to 8 in flight" \
    awk -v a="$(row 1 | awk '{print $2}')" -v b="$(row 8 | awk '{print $2}')" 'BEGIN { exit !(b > a) }'
check "measured TTFT rises from 1 to 8 in flight" \
    awk -v a="$(row 1 | awk '{print $3}')" -v b="$(row 8 | awk '{print $3}')" 'BEGIN { exit !(b > a) }'
# TTFT at both levels; TPOT at 8 only: a lone decode step of 0.2 ms is moved 3-10x by
# other work on the machine between the calibration bursts and the levels
check "every TTFT prediction within a factor of 20 of its measurement" within20
# TPOT at 8 in flight: the 8 sequences decode together (steps of about 2 ms here), which
# the closed-loop solver once missed 8x (0.25 ms predicted: it held 1.4 requests in the
# loop, not 8); within 6x (10-20% on a quiet machine; 3.4x seen with a busy loop on one
# of 2 cores)
check "TPOT at 8 in flight predicted within a factor of 6 of its measurement" \
    awk -v p="$(row 8 | awk '{print $5}')" -v m="$(row 8 | awk '{print $6}')" \
    'BEGIN { exit !(p > 0 && m > 0 && p < 6 * m && m < 6 * p) }'
# the run checks its own calibration: a lone request's TTFT again after the bursts; a
# calibration 30x off (TRNBENCH_TEST_REGIME_DISTURB, as other work on the machine once made
# it) is said and taken once more, and the predictions come from the second
TRNBENCH_TEST=1 TRNBENCH_TEST_REGIME_DISTURB=1 TMPDIR="$tmp" "$TB_BIN" perf --regime \
    --model llama-small --seq-in 64 --seq-out 32 --concurrency 1,8 --requests 24 \
    >"$tmp/dist.out" 2>"$tmp/dist.err"
rc=$?
check "a disturbed calibration: exit 0, said, taken once more" \
    sh -c 'test $0 = 0 && grep -q "^calibration disturbed: a lone request.s TTFT was [0-9.]* ms in the bursts and [0-9.]* ms after them (other work on the machine?); calibrating once more$" "$1"' \
    $rc "$tmp/dist.out"
# the second calibration's prefill is the one printed, the first's 30x is not: within 10x
# of the TTFT measured at concurrency 1 (the same lone prompt)
p=$(sed -n 's/^step costs from bursts against it (medians): prefill \([0-9.]*\) ms.*/\1/p' "$tmp/dist.out")
m=$(awk '$1 == 1 && NF == 10 { print $3 }' "$tmp/dist.out")
check "  the predictions use the second calibration: prefill $p ms against $m ms measured alone" \
    awk -v p="$p" -v m="$m" 'BEGIN { exit !(p > 0 && m > 0 && p < 10 * m && m < 10 * p) }'

#!/bin/sh
# tests/cli/options.t: the option syntax of the commands, which declare their options
# as tables (harness/cli/cli_opt.h): "--opt=value" means what "--opt value" means, a
# missing value, an unknown option or a stray operand is a usage error (exit 2) that
# names it, and every command refuses a bad number in one wording. Where a command
# cannot run here (perf measures for minutes, perf --gpu needs a GPU) a value the
# command refuses shows that the "=" form reached it. Needs TB_BIN, TB_SRCDIR and
# TB_BUILDDIR (make check sets them).

. "${TB_SRCDIR:-.}/tests/cli/tap.sh"
tmp="$TB_BUILDDIR/tests/tmp/cli_options"
rm -rf "$tmp" && mkdir -p "$tmp"
p5="$TB_SRCDIR/tests/data/platform_p5"

# status FILE: the exit status a run left in FILE.rc
status() { cat "$1.rc"; }
# run NAME ARGS...: the program's stdout in $tmp/NAME, stderr in NAME.err, status in NAME.rc
run() {
    n=$1
    shift
    "$TB_BIN" "$@" >"$tmp/$n" 2>"$tmp/$n.err"
    echo $? >"$tmp/$n.rc"
}

echo "1..58"

# ---- detect: runs anywhere, on a fake machine with --root ----
run d_sp detect --format csv --root "$p5"
run d_eq detect --format=csv --root="$p5"
check "detect --format csv --root DIR exits 0" test "$(status "$tmp/d_sp")" = 0
check "  and names the fake machine's instance type" grep -qx 'target,p5.48xlarge' "$tmp/d_sp"
check "detect --format=csv --root=DIR exits 0" test "$(status "$tmp/d_eq")" = 0
check "  and prints the same table" cmp -s "$tmp/d_sp" "$tmp/d_eq"
run d_txt detect --root="$p5" --format=text
check "detect --format=text: aligned key value lines" \
    grep -qx 'target               p5.48xlarge' "$tmp/d_txt"
run d_bad detect --format=xml
check "detect --format=xml exits 2" test "$(status "$tmp/d_bad")" = 2
check "  and says the format is unknown" \
    grep -qx "trnbench detect: option '--format': 'xml' is not text or csv" "$tmp/d_bad.err"
run d_noval detect --root
check "detect --root without a value exits 2" test "$(status "$tmp/d_noval")" = 2
check "  and says it needs one" grep -qx "trnbench detect: option '--root' needs a value" "$tmp/d_noval.err"
run d_unk detect --colour=red
check "detect --colour=red: exit 2, the unknown option named" \
    sh -c "test $(status "$tmp/d_unk") = 2 && grep -qx \"trnbench detect: unknown option '--colour=red'\" '$tmp/d_unk.err'"
run d_op detect extra
check "detect with an operand: exit 2, the operand named" \
    sh -c "test $(status "$tmp/d_op") = 2 && grep -qx \"trnbench detect: unknown argument 'extra'\" '$tmp/d_op.err'"
run d_help detect --help
check "detect --help exits 0 with the usage on stdout" \
    sh -c "test $(status "$tmp/d_help") = 0 && head -1 '$tmp/d_help' | grep -q '^usage: trnbench detect '"

# ---- perf (CPU): the values reach their checks in both forms ----
run p_reps perf --reps=0
check "perf --reps=0: exit 2, the value refused" \
    sh -c "test $(status "$tmp/p_reps") = 2 && grep -qx \"trnbench perf: option '--reps': '0' is not a whole number from 1 to 1000\" '$tmp/p_reps.err'"
run p_seq perf --seq=abc
check "perf --seq=abc: the value refused" \
    grep -qx "trnbench perf: option '--seq': 'abc' is not a whole number from 1 to 1048576" "$tmp/p_seq.err"
run p_triad perf --triad-mib=2000000
check "perf --triad-mib=2000000: out of range" \
    grep -qx "trnbench perf: option '--triad-mib': '2000000' is not a whole number from 1 to 1048576" "$tmp/p_triad.err"
run p_model perf --model=no-such-model
check "perf --model=NAME: exit 2, the model looked up" \
    sh -c "test $(status "$tmp/p_model") = 2 && grep -q \"^trnbench perf: unknown model 'no-such-model'\" '$tmp/p_model.err'"
run p_model_sp perf --model no-such-model
check "  the same message as --model NAME" cmp -s "$tmp/p_model.err" "$tmp/p_model_sp.err"
run p_noval perf --seq
check "perf --seq without a value: exit 2, said" \
    sh -c "test $(status "$tmp/p_noval") = 2 && grep -qx \"trnbench perf: option '--seq' needs a value\" '$tmp/p_noval.err'"

# ---- perf --predictor: no options but --help ----
run m_help perf --predictor --help
check "perf --predictor --help exits 0 with its usage" \
    sh -c "test $(status "$tmp/m_help") = 0 && head -1 '$tmp/m_help' | grep -qx 'usage: trnbench perf --predictor'"
run m_unk perf --predictor --reps=3
check "perf --predictor --reps=3: exit 2, the option named" \
    sh -c "test $(status "$tmp/m_unk") = 2 && grep -qx \"trnbench perf: unknown option '--reps=3'\" '$tmp/m_unk.err'"

# ---- perf --gpu: TRNBENCH_CUDA=0 stops it before a GPU is looked for ----
export TRNBENCH_CUDA=0
run g_model perf --gpu --model=no-such-model
check "perf --gpu --model=NAME: exit 2, the model looked up" \
    sh -c "test $(status "$tmp/g_model") = 2 && grep -q \"^trnbench perf: unknown model 'no-such-model'\" '$tmp/g_model.err'"
run g_batch perf --gpu --batch=0
check "perf --gpu --batch=0: the value refused" \
    grep -qx "trnbench perf: option '--batch': '0' is not a whole number from 1 to 1048576" "$tmp/g_batch.err"
run g_mode perf --gpu --peer=pytorch --peer-mode=fast
check "perf --gpu --peer-mode=fast: exit 2, the mode refused" \
    sh -c "test $(status "$tmp/g_mode") = 2 && grep -qx \"trnbench perf: option '--peer-mode': 'fast' is not eager, compile or both\" '$tmp/g_mode.err'"
run g_peer perf --gpu --peer=jax
check "perf --gpu --peer=jax: the peer looked up" \
    grep -qx "trnbench perf: option '--peer': unknown peer 'jax' (known: pytorch)" "$tmp/g_peer.err"
# an --out folder whose results.csv is not one is refused before anything runs
mkdir -p "$tmp/out" && printf 'not,a\nresults,file\n' >"$tmp/out/results.csv"
run g_out perf --gpu --out="$tmp/out"
check "perf --gpu --out=DIR: exit 2, DIR's results.csv read" \
    sh -c "test $(status "$tmp/g_out") = 2 && grep -q '^trnbench perf: --out: ' '$tmp/g_out.err'"
run g_ok perf --gpu --seq=64 --batch=1 --reps=1 --model=llama-tiny --peer=pytorch \
    --peer-mode=eager --peer-timeout=5 --python=/nonexistent
check "perf --gpu with every option in the = form: exit 0 (no GPU here)" \
    test "$(status "$tmp/g_ok")" = 0
check "  skipped with the reason" \
    grep -qx "trnbench perf --gpu: skipped: no GPU: disabled (TRNBENCH_CUDA=0)" "$tmp/g_ok"

# ---- every command: a bad number for a numeric option is refused in one wording (cli_opt.h),
# the command and the option named, exit 2, before anything runs ----
# refuses WORDING ARGS...: trnbench ARGS exits 2 with exactly WORDING on stderr
refuses() {
    w=$1
    shift
    "$TB_BIN" "$@" >/dev/null 2>"$tmp/num.err"
    rc=$?
    check "$* -> exit 2, '$w' (exit $rc)" sh -c 'test "$0" = 2 && grep -qxF -- "$1" "$2"' \
        "$rc" "$w" "$tmp/num.err"
}
refuses "trnbench detect: option '--timeout': '0' is not a number from 0.001 to 3600" detect --timeout=0
refuses "trnbench assess: option '--claim-low': 'x' is not a number from 0 to 1000000000000" \
    assess --claim-low=x
refuses "trnbench perf: option '--reps': '1001' is not a whole number from 1 to 1000" perf --reps=1001
refuses "trnbench perf: option '--seq': '0' is not a whole number from 1 to 1048576" perf --gpu --seq=0
refuses "trnbench perf: option '--requests': '0' is not a whole number from 1 to 10000000" \
    perf --serve --requests=0
refuses "trnbench perf: option '--seq-out': '1' is not a whole number from 2 to 100000" \
    perf --regime --seq-out=1
refuses "trnbench import: option '--chips': '0' is not a whole number from 1 to 10000000" \
    import --chips=0
refuses "trnbench calibrate: option '--host-mem-gbyte-per-s': 'fast' is not a number from 0.001 to 100000" \
    calibrate --host-mem-gbyte-per-s=fast
refuses "trnbench collectives: option '--iters': '0' is not a whole number from 1 to 1000000" \
    collectives --iters=0
refuses "trnbench train-dp: option '--steps': '0' is not a whole number from 1 to 100000" \
    train-dp --steps=0
refuses "trnbench serve: option '--port': '70000' is not a whole number from 0 to 65535" \
    serve --port=70000
refuses "trnbench predict: option '--ranks': '0' is not a whole number from 1 to 10000000" \
    predict --ranks=0
refuses "trnbench validate: option '--jobs': '65' is not a whole number from 1 to 64" validate --jobs=65
refuses "trnbench report: option '--usd-per-hour': '-1' is not a number from 1e-9 to 10000000" \
    report --usd-per-hour=-1
refuses "trnbench compare: option '--ttft-ms': '0' is not a number from 1e-9 to 1e18" compare --ttft-ms=0
refuses "trnbench run: option '--progress': '-1' is not a number from 0 to 86400" run --progress=-1
refuses "trnbench run: option '--nodes': '0' is not a whole number from 1 to 100000" run --nodes=0
# a workload option: its range is the suite run line's field's (TB_SUITE_RUN_RANGES)
refuses "trnbench run: option '--reps': 'x' is not a whole number from 1 to 100000" run --reps=x
refuses "trnbench run: option '--executor': 'gpu' is not cpu, cuda, pytorch or all" run --executor=gpu

# ---- perf's modes are commands (perf-predictor, perf-gpu, perf-serve, perf-regime);
# `perf --predictor` (--gpu, --serve, --regime) stays their alias ----
# each new command's --help: exit 0, its usage naming itself, and `trnbench --help` lists it
run top_cmds --help
for c in perf-predictor perf-gpu perf-serve perf-regime; do
    run "h_$c" "$c" --help
    check "$c --help: exit 0, 'usage: trnbench $c', listed in trnbench --help" \
        sh -c 'test "$(cat "$1.rc")" = 0 && head -1 "$1" | grep -q "^usage: trnbench $2\( \|\$\)" && grep -q "^  $2  " "$3"' \
        sh "$tmp/h_$c" "$c" "$tmp/top_cmds"
done
# same_as NAME CMD FLAG ARGS...: `trnbench CMD ARGS` and its alias `trnbench perf FLAG ARGS`
# end alike: the same exit status, and the same stdout and stderr once each one's name
# ("perf-gpu"; "perf --gpu" or the alias's prefix "perf") is read as one
same_as() {
    sa=$1 sa_cmd=$2 sa_flag=$3
    shift 3
    run "${sa}_new" "$sa_cmd" "$@"
    run "${sa}_old" perf "$sa_flag" "$@"
    check "trnbench $sa_cmd $* and trnbench perf $sa_flag $* end alike (status, output but for the name)" \
        sh -c 'c=$2 f=$3
               norm() { sed "s/trnbench $c/trnbench NAME/g; s/trnbench perf $f/trnbench NAME/g; s/^trnbench perf:/trnbench NAME:/" "$1" | tr -s " "; }
               test "$(cat "$1_new.rc")" = "$(cat "$1_old.rc")" &&
               test "$(norm "$1_new")" = "$(norm "$1_old")" &&
               test "$(norm "$1_new.err")" = "$(norm "$1_old.err")"' \
        sh "$tmp/$sa" "$sa_cmd" "$sa_flag"
    check "  and $sa_cmd says its own name" \
        sh -c 'cat "$1_new" "$1_new.err" | grep -q "^\(usage: \)\?trnbench $2[: ]"' sh "$tmp/$sa" "$sa_cmd"
}
same_as a_gpu perf-gpu --gpu --model=llama-tiny --seq=64
same_as a_gpu_bad perf-gpu --gpu --batch=0
same_as a_pred perf-predictor --predictor --reps=3
run a_flag perf-serve --serve
check "perf-serve --serve: exit 2, the flag is the alias's, not the command's" \
    sh -c "test $(status "$tmp/a_flag") = 2 && grep -qx \"trnbench perf-serve: unknown option '--serve'\" '$tmp/a_flag.err'"

# ---- trnbench --help: every command's summary starts in one column ----
run top_help --help
check "trnbench --help: the command summaries in one column (after the longest name)" \
    sh -c "test $(status "$tmp/top_help") = 0 && sed -n '/^Commands:/,/^\$/p' '$tmp/top_help' | awk 'NR > 1 && NF { match(\$0, /^  [^ ]+ +/); c = RLENGTH; if (c0 == \"\") c0 = c; else if (c != c0) bad = 1; n++ } END { exit !(n >= 14 && !bad) }'"

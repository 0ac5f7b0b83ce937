#!/bin/sh
# tests/cli/peer.t: `trnbench perf --gpu --peer pytorch` from the command line: the help,
# usage errors (exit 2), and without a GPU the perf's "skipped: no GPU" and exit 0 before
# any peer runs. The peer's protocol and runner: tests/unit/peer.c; the script itself:
# tests/cli/peer-script.t. Needs TB_BIN, TB_SRCDIR and TB_BUILDDIR (make check sets them).

. "${TB_SRCDIR:-.}/tests/cli/tap.sh"
tmp="$TB_BUILDDIR/tests/tmp/cli_peer"
rm -rf "$tmp" && mkdir -p "$tmp"

echo "1..8"
"$TB_BIN" perf --gpu --help >"$tmp/help" 2>&1
check "perf --gpu --help exits 0" test $? -eq 0
check "the help names --peer, --python and --out" \
    sh -c "grep -q -- '--peer pytorch' '$tmp/help' && grep -q -- '--python PATH' '$tmp/help' && grep -q -- '--out DIR' '$tmp/help'"
"$TB_BIN" perf --gpu --peer jax >"$tmp/jax" 2>&1
check "an unknown peer: exit 2" test $? -eq 2
check "  says which are known" grep -q "unknown peer 'jax' (known: pytorch)" "$tmp/jax"
"$TB_BIN" perf --gpu --peer pytorch --peer-mode fast >"$tmp/mode" 2>&1
check "a bad --peer-mode: exit 2" test $? -eq 2

# Without a GPU (this machine, CI, TRNBENCH_CUDA=0 anywhere) the perf stops before the
# peer: a stand-in interpreter that would leave a trace shows it was never run.
cat >"$tmp/python" <<EOS
#!/bin/sh
touch '$tmp/python-ran'
exit 1
EOS
chmod +x "$tmp/python"
TRNBENCH_CUDA=0 "$TB_BIN" perf --gpu --peer pytorch --python "$tmp/python" \
    --out "$tmp/out" >"$tmp/nogpu" 2>&1
check "no GPU: perf --gpu --peer pytorch exits 0" test $? -eq 0
check "  prints 'skipped: no GPU'" grep -q "^trnbench perf --gpu: skipped: no GPU" "$tmp/nogpu"
check "  runs no peer and writes no results" \
    sh -c "test ! -e '$tmp/python-ran' && test ! -e '$tmp/out/results.csv'"

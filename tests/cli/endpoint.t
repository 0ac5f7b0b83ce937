#!/bin/sh
# tests/cli/endpoint.t: the endpoint executor end to end (`trnbench run --endpoint`):
# a concurrency sweep and an open-loop level against `trnbench serve` started by the
# run itself (endpoint=self), the rows and their arithmetic, queueing visible in TTFT,
# resume, a suite's serve line whose server_cmd is quoted (started without a shell, two
# starts recorded), refused input (exit 2, nothing written), a server that is not there
# or never becomes ready (exit 1 in bounded time, nothing recorded), and the report's
# interactivity chart of the measured levels. Needs TB_BIN, TB_SRCDIR and TB_BUILDDIR
# (make check sets them).

. "${TB_SRCDIR:-.}/tests/cli/tap.sh"
tmp="$TB_BUILDDIR/tests/tmp/cli_endpoint"
rm -rf "$tmp" && mkdir -p "$tmp"

echo "1..40"

# field NAME FILE RUN_ID_PART METRIC: the NAME column of the row of METRIC whose run_id
# contains RUN_ID_PART (perl, which prove needs anyway, splitting quoted CSV fields)
field() {
    perl -e '
        my ($name, $file, $part, $metric) = @ARGV;
        open my $f, "<", $file or exit 1;
        sub cells { my @c; my $l = shift; chomp $l;
            while ($l =~ /\G(?:"((?:[^"]|"")*)"|([^,]*))(,|$)/g) {
                my $v = defined $1 ? $1 =~ s/""/"/gr : $2; push @c, $v; last if $3 eq "" }
            return @c }
        my @h = cells(scalar <$f>); my %col; @col{@h} = 0 .. $#h;
        while (my $l = <$f>) { my @c = cells($l);
            if (index($c[$col{run_id}], $part) >= 0 && $c[$col{metric}] eq $metric) {
                print $c[$col{$name}]; exit } }' "$@"
}
value() { field value "$@"; }

# ---- a sweep against trnbench serve, started and stopped by the run ----
out="$tmp/sweep"
"$TB_BIN" run --endpoint self --model llama-tiny --seq-in 16 --seq-out 8 --concurrency 1,8 \
    --requests 16 --max-num-seqs 2 --request-rate 40 --out "$out" 2>"$tmp/sweep.err"
check "a sweep against endpoint=self exits 0" test $? -eq 0
res="$out/results.csv"
check "the server was started, ready and stopped with exit status 0" \
    sh -c "grep -q 'server ready in' '$tmp/sweep.err' && grep -q 'server stopped: exited with status 0' '$tmp/sweep.err'"
check "its output saved in the out folder" test -s "$out/server-1.log"
check "three levels: c1, c8 and r40" \
    test "$(cut -d, -f1 "$res" | grep '^endpoint:llama-tiny/serve/\(c1\|c8\|r40\)/in16/out8/fp32@self$' | sort -u | wc -l)" = 3
for lv in c1 c8 r40; do
    check "$lv: latency, throughput and failure rows" \
        test -n "$(value "$res" "/$lv/" ttft_ms)" -a -n "$(value "$res" "/$lv/" tpot_ms)" \
        -a -n "$(value "$res" "/$lv/" itl_ms)" -a -n "$(value "$res" "/$lv/" e2e_latency_ms)" \
        -a -n "$(value "$res" "/$lv/" output_tokens_per_s)" -a "$(value "$res" "/$lv/" failed_requests)" = 0
done
check "16 requests counted (n of ttft_ms), warm-up not counted" test "$(field n "$res" /c8/ ttft_ms)" = 16
check "no token count differs from the 16 and 8 asked" test "$(value "$res" /c8/ mismatched_requests)" = 0
check "ITL over every gap: 16 x 7" test "$(field n "$res" /c1/ itl_ms)" = 112
check "p50 <= p90 <= p99 for TTFT" awk -v a="$(value "$res" /c8/ ttft_ms)" \
    -v b="$(field p90 "$res" /c8/ ttft_ms)" -v c="$(field p99 "$res" /c8/ ttft_ms)" \
    'BEGIN { exit !(a <= b && b <= c) }'
check "output tokens/s = 8 x requests/s (both over the same window)" \
    awk -v o="$(value "$res" /c8/ output_tokens_per_s)" -v r="$(value "$res" /c8/ requests_per_s)" \
    'BEGIN { d = o / (8 * r) - 1; exit !(d < 1e-4 && d > -1e-4) }'
check "total tokens/s = (16 + 8) x requests/s: prompt tokens only in the total" \
    awk -v t="$(value "$res" /c8/ total_tokens_per_s)" -v r="$(value "$res" /c8/ requests_per_s)" \
    'BEGIN { d = t / (24 * r) - 1; exit !(d < 1e-4 && d > -1e-4) }'
c8=$(value "$res" /c8/ ttft_ms)
c1=$(value "$res" /c1/ ttft_ms)
check "TTFT rises with queueing: c8 on 2 slots ($c8 ms) > 2 x c1 ($c1 ms)" \
    awk -v a="$c8" -v b="$c1" 'BEGIN { exit !(a > 2 * b) }'
check "concurrency column 8, achieved concurrency beside it in (4, 8]" \
    awk -v c="$(field concurrency "$res" /c8/ ttft_ms)" -v a="$(value "$res" /c8/ achieved_concurrency)" \
    'BEGIN { exit !(c == 8 && a > 4 && a <= 8.001) }'
check "open loop: request_rate 40, achieved rate recorded in (10, 160)" \
    awk -v c="$(field request_rate "$res" /r40/ ttft_ms)" -v a="$(value "$res" /r40/ achieved_request_rate)" \
    'BEGIN { exit !(c == 40 && a > 10 && a < 160) }'
check "rows are measured, executor endpoint, device the server" \
    test "$(field executor "$res" /c1/ ttft_ms)" = endpoint -a \
    "$(field provenance "$res" /c1/ ttft_ms)" = measured -a \
    -n "$(field device "$res" /c1/ ttft_ms | grep '^trnbench serve')"
check "workload and config in the model's form" \
    test "$(field workload "$res" /c8/ ttft_ms)" = llama-tiny/serve/in16/out8/fp32 -a \
    "$(field config "$res" /c8/ ttft_ms)" = llama-tiny/serve/b8/in16/out8/fp32
check "flops: the model FLOPs of the 16 requests, 2 per parameter and token (llama-tiny: 0.1 M)" \
    awk -v f="$(field flops "$res" /c8/ output_tokens_per_s)" \
    'BEGIN { exit !(f > 16 * 2 * 24 * 0.05e6 && f < 16 * 2 * 24 * 0.5e6) }'
check "server_start_s recorded once, positive" \
    test "$(grep -c ',server_start_s,' "$res")" = 1 -a -n "$(value "$res" /c1/ server_start_s)"
rows=$(wc -l <"$res")
"$TB_BIN" run --endpoint self --model llama-tiny --seq-in 16 --seq-out 8 --concurrency 1,8 \
    --requests 16 --max-num-seqs 2 --request-rate 40 --out "$out" 2>"$tmp/resume.err"
check "run again: exits 0, every level already there, no server started" \
    sh -c "test $? -eq 0 && test \$(grep -c 'already in results, skipped' '$tmp/resume.err') = 3 && ! grep -q 'starting the server' '$tmp/resume.err'"
check "  and no row added" test "$(wc -l <"$res")" = "$rows"

# ---- the report draws the measured levels ----
"$TB_BIN" report --out "$tmp/report" "$res" >/dev/null 2>"$tmp/report.err"
check "report of the serving rows exits 0" test $? -eq 0
check "its interactivity chart has the measured line and the levels" \
    sh -c "grep -q 'host(measured)' '$tmp/report/interactivity-1.svg' && grep -q '>c8<' '$tmp/report/interactivity-1.svg'"
check "report.md lists the levels by their load" grep -q '| serve | c8 in16 out8 |' "$tmp/report/report.md"
check "report.md's serving section: c8 with its TTFT p50 / p99 and 0 of 16 failed" \
    grep -q "^| llama-tiny/serve/in16/out8/fp32 | host | trnbench serve .* | c8 in16 out8 | [0-9.]* | [0-9.e+]* | [^|]* | [0-9.]* / [0-9.]* | .* | 0 of 16 |" "$tmp/report/report.md"

# ---- a suite's serve line: a quoted server_cmd, no shell, two starts ----
port=$((20000 + $$ % 20000))
suite="$tmp/serve.suite"
cat >"$suite" <<EOF
suite serving
serve model=llama-tiny endpoint=http://127.0.0.1:$port/v1 seq_in=8 seq_out=4 concurrency=2 requests=4 server_cmd='$TB_BIN serve --model llama-tiny --port $port --served-model-name "tiny model \$HOME"' server_label='our server' server_start=cold,warm
EOF
"$TB_BIN" run --suite "$suite" --out "$tmp/suite" 2>"$tmp/suite.err"
check "a suite's serve line with a quoted server_cmd exits 0" test $? -eq 0
sres="$tmp/suite/results.csv"
check "the served name came through whole and unexpanded, from the server's list" \
    grep -q "serves 'tiny model \$HOME'" "$tmp/suite.err"
check "cold and warm starts both recorded" \
    test -n "$(value "$sres" /c2/ server_start_s)" -a -n "$(value "$sres" /c2/ server_warm_start_s)"
check "the label names the server in device and the run id" \
    sh -c "grep -q ',our server trnbench ' '$sres' && grep -q '^endpoint:llama-tiny/serve/c2/in8/out4/bf16@our_server,' '$sres'"

# ---- refused input: exit 2, nothing written ----
"$TB_BIN" run --endpoint self --model llama-tiny --seq-in 16 --concurrency 1099511627776 \
    --out "$tmp/bad" 2>"$tmp/bad.err"
check "--concurrency 2^40 refused with exit 2, the field named" \
    sh -c "test $? -eq 2 && grep -q \"field 'concurrency'\" '$tmp/bad.err' && test ! -e '$tmp/bad'"
"$TB_BIN" run --endpoint self --model llama-tiny --seq-in 16 --request-rate 1e18 \
    --out "$tmp/bad" 2>"$tmp/bad.err"
check "--request-rate 1e18 refused with exit 2" sh -c "test $? -eq 2 && test ! -e '$tmp/bad'"
printf 'serve model=llama-tiny endpoint=self seq_in=8 server_cmd='"'"'unterminated\n' >"$tmp/badq.suite"
"$TB_BIN" run --suite "$tmp/badq.suite" --out "$tmp/bad" 2>"$tmp/bad.err"
check "an unterminated quote in a suite: exit 2 with file and line" \
    sh -c "test $? -eq 2 && grep -q 'badq.suite: line 1' '$tmp/bad.err'"

# ---- a server that is not there, or never ready: exit 1 in bounded time ----
start=$(date +%s)
"$TB_BIN" run --endpoint http://127.0.0.1:9/v1 --model llama-tiny --seq-in 8 --seq-out 4 \
    --out "$tmp/gone" 2>"$tmp/gone.err"
check "a refused connection: exit 1, said, nothing recorded" \
    sh -c "test $? -eq 1 && grep -q 'connect' '$tmp/gone.err' && test ! -s '$tmp/gone/results.csv'"
"$TB_BIN" run --endpoint http://127.0.0.1:9/v1 --model llama-tiny --seq-in 8 --seq-out 4 \
    --server-cmd 'sleep 30' --server-timeout 1 --out "$tmp/gone" 2>"$tmp/gone.err"
check "a server never ready: exit 1 after its timeout, the child gone" \
    sh -c "test $? -eq 1 && grep -q 'server not started' '$tmp/gone.err' && ! pgrep -f '^sleep 30$' >/dev/null"
check "both within 15 s" test $(($(date +%s) - start)) -lt 15

# endpoint=self on the CUDA engine: bf16 only, endpoint=self only; where there is no GPU
# the server says why and the level fails (exit 1), nothing recorded
TRNBENCH_CUDA=0 "$TB_BIN" run --endpoint self --engine cuda --model llama-tiny --seq-in 8 \
    --seq-out 4 --requests 2 --out "$tmp/cuda" 2>"$tmp/cuda.err"
check "engine cuda without a GPU: exit 1" test $? -eq 1
check "the server's reason reaches the run's output" \
    grep -q "trnbench serve: --engine cuda: disabled (TRNBENCH_CUDA=0)" "$tmp/cuda.err"
"$TB_BIN" run --endpoint self --engine cuda --precision fp32 --model llama-tiny --seq-in 8 \
    --seq-out 4 --out "$tmp/cuda32" 2>"$tmp/cuda32.err"
check "engine cuda in fp32: exit 2" \
    sh -c "test $? -eq 2 && grep -q 'serve --engine cuda runs bf16, not fp32' '$tmp/cuda32.err'"
"$TB_BIN" run --endpoint http://127.0.0.1:9/v1 --engine cuda --model llama-tiny --seq-in 8 \
    --seq-out 4 --out "$tmp/cudaurl" 2>"$tmp/cudaurl.err"
check "engine with another endpoint: exit 2" \
    sh -c "test $? -eq 2 && grep -q \"field 'engine': for endpoint=self\" '$tmp/cudaurl.err'"

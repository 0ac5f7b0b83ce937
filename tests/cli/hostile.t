#!/bin/sh
# tests/cli/hostile.t: the endpoint's server and client under hostile peers, on loopback,
# with the peers of tests/cli/hostile_peer.py (Python 3 stdlib). The server (`trnbench
# serve --engine instant` with small limits): a 100 MB body claimed, streamed or chunked
# (413 or closed at once, bounded RSS), slowloris clients (dropped at --read-timeout
# while a normal request goes through), malformed JSON, wrong types, huge numbers and
# invalid UTF-8 (400 with the reason), a long non-ASCII model name (a valid JSON 404),
# 2000 connections at once, answered or held (served or refused within
# --max-connections, threads and RSS bounded, the server alive and serving after), a
# reader that stops reading a long stream (cut off), a slow engine (not).
# The client (`trnbench run --endpoint`): a server whose streams are a 100 MB event
# without a newline, endless content, invalid UTF-8, a drip of a byte a second, a chunk
# that is not JSON, no Content-Type and endless comments, between good ones: each such
# request fails with its reason and number in bounded time and memory, the good ones are
# recorded. Memory is VmHWM of /proc/PID/status. Needs TB_BIN, TB_SRCDIR and
# TB_BUILDDIR (make check sets them).

. "${TB_SRCDIR:-.}/tests/cli/tap.sh"
tmp="$TB_BUILDDIR/tests/tmp/cli_hostile"
rm -rf "$tmp" && mkdir -p "$tmp"

if ! command -v python3 >/dev/null 2>&1 || ! command -v curl >/dev/null 2>&1; then
    echo "1..0 # SKIP python3 and curl are needed"
    exit 0
fi
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt 4200 ]; then
    ulimit -n 4200 2>/dev/null || {
        echo "1..0 # SKIP 2000 connections need 4200 file descriptors (ulimit -n is $(ulimit -n))"
        exit 0
    }
fi

echo "1..44"
py="$TB_SRCDIR/tests/cli/hostile_peer.py"
peer() { python3 "$py" "$@"; } # in the foreground; in the background python3 itself, for $!
# kv KEY LINE: the value of KEY=VALUE in LINE
kv() { printf '%s\n' "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
# hwm PID: the process's peak resident memory in kB (VmHWM)
hwm() { sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB$/\1/p' "/proc/$1/status"; }
# lt A B: A < B, as numbers
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 < b + 0) }'; }

pid=
hpid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null
    [ -n "$hpid" ] && kill "$hpid" 2>/dev/null
}
trap cleanup EXIT

# ---- the limits are options, refused out of range ----
"$TB_BIN" serve --model llama-tiny --max-connections 0 >/dev/null 2>"$tmp/opt.err"
check "--max-connections 0: exit 2, the range said" \
    sh -c "test $? -eq 2 && grep -qF -- \"option '--max-connections': '0' is not a whole number from 1 to 100000\" '$tmp/opt.err'"
"$TB_BIN" serve --model llama-tiny --max-body-bytes 0 >/dev/null 2>"$tmp/opt.err"
check "--max-body-bytes 0: exit 2, the range said" \
    sh -c "test $? -eq 2 && grep -qF -- \"option '--max-body-bytes': '0' is not a whole number from 1 to \" '$tmp/opt.err'"
"$TB_BIN" serve --model llama-tiny --read-timeout -1 >/dev/null 2>"$tmp/opt.err"
check "--read-timeout -1: exit 2, the range said" \
    sh -c "test $? -eq 2 && grep -qF -- \"option '--read-timeout': '-1' is not a number from 0.01 to 86400\" '$tmp/opt.err'"

# ---- the server ----
"$TB_BIN" serve --model llama-tiny --port 0 --engine instant --max-body-bytes 1048576 \
    --read-timeout 2 --max-connections 200 >"$tmp/serve.out" 2>"$tmp/serve.err" &
pid=$!
port=
for _ in $(seq 1 100); do
    port=$(sed -n 's|^trnbench serve: listening on http://127\.0\.0\.1:\([0-9]*\)/v1 .*|\1|p' "$tmp/serve.out")
    [ -n "$port" ] && break
    sleep 0.1
done
check "the server listens" test -n "$port"
if [ -z "$port" ]; then
    sed 's/^/# /' "$tmp/serve.err"
    echo "Bail out! trnbench serve did not start"
    exit 1
fi
url="http://127.0.0.1:$port/v1/completions"
rss0=$(hwm "$pid")
# normal SECONDS: a streamed completion of 3 tokens; "CODE TIME" on stdout
normal() {
    curl -s --max-time "$1" -o "$tmp/normal.sse" -w '%{http_code} %{time_total}' \
        -H 'Content-Type: application/json' -d '{"prompt":[1,2],"max_tokens":3,"stream":true}' "$url"
}

# oversized bodies: 100 MB claimed, streamed with its length, streamed chunked
r=$(peer body "$port" 100000000 claim 10)
check "a body of 100 MB claimed by Content-Length: 413 in under 1 s ($r)" \
    sh -c "test '$(kv status "$r")' = 413 && awk 'BEGIN { exit !($(kv seconds "$r") < 1) }'"
r=$(peer body "$port" 100000000 stream 10)
check "100 MB streamed with its length: 413 before half of it is sent ($r)" \
    sh -c "test '$(kv status "$r")' = 413 && test $(kv sent "$r") -lt 50000000"
r=$(peer body "$port" 100000000 chunked 10)
check "100 MB streamed chunked: the connection ends (413 or closed) before half is sent ($r)" \
    sh -c "test $(kv sent "$r") -lt 50000000 && awk 'BEGIN { exit !($(kv seconds "$r") < 5) }'"
rss=$(hwm "$pid")
check "the server's peak RSS grew under 8 MB with the three ($rss0 -> $rss kB)" lt $((rss - rss0)) 8192

# slowloris: 20 clients at a byte a second, a normal request meanwhile
python3 "$py" slowloris "$port" 20 10 >"$tmp/slow.out" &
spid=$!
sleep 0.5
r=$(normal 5)
check "a normal request among 20 slow clients: 200 in under 2 s ($r)" \
    sh -c "test '${r% *}' = 200 && awk 'BEGIN { exit !(${r#* } < 2) }'"
check "  with its 3 tokens" test "$(grep -c '"text":" t[0-9]*"' "$tmp/normal.sse")" -eq 3
wait "$spid"
r=$(cat "$tmp/slow.out")
check "the 20 slow clients dropped at --read-timeout 2, between 1.5 and 6 s ($r)" \
    sh -c "test '$(kv dropped "$r")' = 20 && awk 'BEGIN { exit !($(kv first_s "$r") >= 1.5 && $(kv last_s "$r") < 6) }'"

# malformed requests: 400 (or 404) with the reason in an OpenAI error object
# bad BODY_FILE EXPECTED_CODE REASON_PATTERN DESCRIPTION
bad() {
    code=$(curl -s --max-time 10 -o "$tmp/bad.json" -w '%{http_code}' \
        -H 'Content-Type: application/json' --data-binary @"$1" "$url")
    good=yes
    test "$code" = "$2" || good=no
    grep -q "\"error\":{\"message\":\"[^\"]*$3" "$tmp/bad.json" || good=no
    python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/bad.json" 2>/dev/null || good=no
    check "$4: $2 naming the reason" test $good = yes
    [ $good = yes ] || { echo "# $code: $(head -c 300 "$tmp/bad.json")"; }
}
printf '{"prompt":[1,' >"$tmp/b1"
bad "$tmp/b1" 400 "not JSON: .*expected near end of file" "truncated JSON"
printf '{"prompt":[1],"max_tokens":"4"}' >"$tmp/b2"
bad "$tmp/b2" 400 "'max_tokens' must be an integer" "max_tokens a string"
printf '{"prompt":[1],"max_tokens":1e999}' >"$tmp/b3"
bad "$tmp/b3" 400 "real number overflow" "max_tokens 1e999"
printf '{"prompt":[1],"max_tokens":123456789012345678901234567890}' >"$tmp/b4"
bad "$tmp/b4" 400 "too big integer" "max_tokens of 30 digits"
printf '{"prompt":[1],"max_tokens":4294967297}' >"$tmp/b5"
bad "$tmp/b5" 400 "'max_tokens' is 4294967297, outside \\[1, " "max_tokens 2^32+1"
printf '{"prompt":"one \377\376 two"}' >"$tmp/b6"
bad "$tmp/b6" 400 "invalid UTF-8: unable to decode byte 0xff" "invalid UTF-8 in the prompt"
printf '{"prompt":"\\ud800"}' >"$tmp/b7"
bad "$tmp/b7" 400 "invalid Unicode" "a lone surrogate in the prompt"
python3 -c 'import sys; sys.stdout.write("{\"model\":\"x" + "\u00e9" * 400 + "\"}")' >"$tmp/b8"
bad "$tmp/b8" 404 "the model 'x" "a model name of 400 non-ASCII letters, cut in the message"
python3 -c 'import sys; sys.stdout.write("{\"prompt\":\"" + "a " * 300000 + "\"}")' >"$tmp/b9"
bad "$tmp/b9" 400 "the prompt has over 4096 tokens" "a prompt of 300000 words"
r=$(normal 5)
check "after them a normal request: 200 ($r)" test "${r% *}" = 200

# 2000 connections at once, each asking GET /health: answered or refused, none left waiting
r=$(peer flood "$port" 2000 20)
check "2000 connections asking at once: none left waiting, no odd answer ($r)" \
    test "$(kv waiting "$r")" = 0 -a "$(kv other "$r")" = 0
# The server takes 200 at once (--max-connections), answers the next 64 with 503 and
# lets libmicrohttpd close the rest at the door. How many reach it together depends
# on the machine's load (a loaded one may trickle them in, each served before the next
# arrives), so: either all were answered (200 or 503), or the server was full, served
# its 200 and refused with 503 before closing any at the door.
ok_n=$(kv ok "$r") ref_n=$(kv refused "$r") closed_n=$(kv closed "$r")
check "  all answered 200 or 503, or the server full: 200 served, 503 before any closed" \
    test $((ok_n + ref_n)) -eq 2000 -o \( "$ok_n" -ge 200 -a "$ref_n" -ge 1 -a "$closed_n" -ge 1 \)
# 2000 connections whose requests never end: held within the limit, then dropped
python3 "$py" flood "$port" 2000 20 hold >"$tmp/hold.out" &
fpid=$!
# the server full (200 + 64 connection threads) before the first are dropped at 2 s
for _ in $(seq 1 30); do
    threads=$(sed -n 's/^Threads:[[:space:]]*//p' "/proc/$pid/status")
    [ "$threads" -ge 264 ] && break
    sleep 0.05
done
r=$(normal 5)
check "2000 held: the server runs at most 200 + 64 connection threads (+ 8 of its own): $threads" \
    test "$threads" -le 272
if [ "$threads" -ge 264 ]; then
    check "  a request then is answered 503 or refused at once, not left waiting (${r% *})" \
        sh -c "case '${r% *}' in 503|000) awk 'BEGIN { exit !(${r#* } < 2) }';; *) exit 1;; esac"
else
    tap_n=$((tap_n + 1))
    echo "ok $tap_n # SKIP the flood had not filled the server within 1.5 s ($threads threads)"
fi
wait "$fpid"
r=$(cat "$tmp/hold.out")
check "  and every held connection is closed by 9 s ($r)" \
    sh -c "test '$(kv waiting "$r")' = 0 && awk 'BEGIN { exit !($(kv seconds "$r") < 9) }'"
r=$(normal 5)
check "after the floods the server is alive and serves: 200 ($r)" test "${r% *}" = 200
rss=$(hwm "$pid")
case $("$TB_BIN" --version 2>/dev/null | head -1) in
*-fsanitize=address*)
    # ASan's shadow memory, redzones and quarantine (freed memory kept back) weigh on
    # each of the flood's threads: the bound is the plain build's
    tap_n=$((tap_n + 1))
    echo "ok $tap_n # SKIP the server's peak RSS bound is the plain build's; under AddressSanitizer it reached $rss kB"
    ;;
*) check "the server's peak RSS after everything: under 96 MB ($rss kB)" lt "$rss" 98304 ;;
esac
kill -TERM "$pid"
wait "$pid"
st=$?
pid=
check "SIGTERM: exit 0, and the limits' counts are logged" \
    sh -c "test $st -eq 0 && grep -q '^trnbench serve: limits: [0-9]* connections refused (503, --max-connections), [1-9][0-9]* dropped at --read-timeout, [1-9][0-9]* bodies over --max-body-bytes (413)$' '$tmp/serve.err'"

# a client that stops reading a long stream: dropped once it has taken nothing for
# --read-timeout (the stream is ~20 MB: more than the socket buffers hold); a stream
# whose tokens come slower than that (the engine's time) is not
# serve_bg OUT ARGS...: trnbench serve in the background, pid in spid, port in sport
serve_bg() {
    o=$1
    shift
    "$TB_BIN" serve --port 0 --engine instant "$@" >"$o" 2>"$o.err" &
    spid=$!
    sport=
    for _ in $(seq 1 100); do
        sport=$(sed -n 's|^trnbench serve: listening on http://127\.0\.0\.1:\([0-9]*\)/v1 .*|\1|p' "$o")
        [ -n "$sport" ] && break
        sleep 0.1
    done
}
serve_bg "$tmp/stall.out" --model llama-3.1-8b --max-model-len 131072 --read-timeout 2
pid=$spid
r=$(peer stall "$sport" 100000 5)
check "a reader stalled 5 s in a stream of 100000 tokens: cut off, under 10 MB sent ($r)" \
    sh -c "test '$(kv eof "$r")' = 1 && test $(kv bytes "$r") -lt 10000000 && awk 'BEGIN { exit !($(kv seconds "$r") < 8) }'"
kill -TERM "$pid"
wait "$pid"
pid=
check "  counted as dropped at --read-timeout" grep -q ', 1 dropped at --read-timeout,' "$tmp/stall.out.err"
serve_bg "$tmp/paced.out" --model llama-tiny --step-us 1500000 --read-timeout 1
pid=$spid
code=$(curl -sN --max-time 20 -o "$tmp/paced.sse" -w '%{http_code}' -H 'Content-Type: application/json' \
    -d '{"prompt":[1],"max_tokens":3,"stream":true}' "http://127.0.0.1:$sport/v1/completions")
check "a stream whose tokens come 1.5 s apart outlives --read-timeout 1: 3 tokens, [DONE]" \
    test "$code" = 200 -a "$(grep -c '"text":" t[0-9]*"' "$tmp/paced.sse")" -eq 3 -a \
    "$(grep -c '^data: \[DONE\]' "$tmp/paced.sse")" -eq 1
kill -TERM "$pid"
wait "$pid"
pid=

# ---- the client against a hostile server ----
modes="good huge good chatter good endless good utf8 good drip good badjson good notype good"
rm -f "$tmp/hport"
python3 "$py" server "$tmp/hport" $modes >/dev/null 2>"$tmp/hostile.log" &
hpid=$!
for _ in $(seq 1 50); do
    [ -s "$tmp/hport" ] && break
    sleep 0.1
done
hport=$(cat "$tmp/hport")
start=$(date +%s)
"$TB_BIN" run --endpoint "http://127.0.0.1:$hport/v1" --model llama-tiny --seq-in 8 --seq-out 4 \
    --concurrency 1 --requests 15 --warmup-requests 0 --request-timeout 3 \
    --out "$tmp/run" 2>"$tmp/run.err" &
rpid=$!
peak=0
while kill -0 "$rpid" 2>/dev/null; do
    v=$(hwm "$rpid")
    [ -n "$v" ] && peak=$v
    sleep 0.05
done
wait "$rpid"
took=$(($(date +%s) - start))
res="$tmp/run/results.csv"
# row METRIC COLUMN: a column of the level's row of METRIC
row() { csv_cell "$res" "$2" metric="$1"; }
check "the run ends in under 15 s (drip bounded by --request-timeout 3): ${took} s" test "$took" -lt 15
check "7 of the 15 requests failed" test "$(row failed_requests value)" = 7
check "the 8 good ones recorded: TTFT over 8 requests, no token count mismatched" \
    test "$(row ttft_ms n)" = 8 -a "$(row mismatched_requests value)" = 0
notes=$(row failed_requests notes)
has() { case "$notes" in *"$1"*) return 0 ;; esac; return 1; }
check "a 100 MB event: request 2, over max_event_bytes" has "malformed event 1: a line longer than 1048576 bytes (max_event_bytes) (request 2)"
check "endless comments: request 4, over max_response_bytes" has "a response over 67108864 bytes (max_response_bytes) (request 4)"
check "endless content: request 6, over the chunk bound" has "over 80 content chunks for 4 tokens (request 6)"
check "invalid UTF-8: request 8, said" has "malformed event 2: invalid UTF-8 (unable to decode byte 0xff"
check "a drip of a byte a second: request 10, the request timeout" has "request timeout (3 s) (request 10)"
check "a chunk that is not JSON: request 12" has "malformed event 2: not JSON ("
check "no Content-Type: request 14" has "HTTP 200 with Content-Type none, not text/event-stream (request 14)"
check "the client's peak RSS under 64 MB through a 100 MB event and 64 MB of comments ($peak kB)" \
    lt "$peak" 65536
kill "$hpid" 2>/dev/null
hpid=

# the same at concurrency 4: the first four to arrive hostile, the twelve others
# streamed beside them, unharmed (their E2E far under the drip's request timeout of 8 s)
rm -f "$tmp/hport"
python3 "$py" server "$tmp/hport" drip huge endless chatter >/dev/null 2>"$tmp/hostile4.log" &
hpid=$!
for _ in $(seq 1 50); do
    [ -s "$tmp/hport" ] && break
    sleep 0.1
done
hport=$(cat "$tmp/hport")
"$TB_BIN" run --endpoint "http://127.0.0.1:$hport/v1" --model llama-tiny --seq-in 8 --seq-out 4 \
    --concurrency 4 --requests 16 --warmup-requests 0 --request-timeout 8 \
    --out "$tmp/run4" 2>"$tmp/run4.err"
res="$tmp/run4/results.csv"
e2e=$(row e2e_latency_ms p99)
check "concurrency 4: 4 failed, 12 recorded, E2E p99 of these ${e2e} ms < 4000" \
    sh -c "test '$(row failed_requests value)' = 4 && test '$(row e2e_latency_ms n)' = 12 && awk 'BEGIN { exit !($e2e < 4000) }'"
kill "$hpid" 2>/dev/null
hpid=

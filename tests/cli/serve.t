#!/bin/sh
# tests/cli/serve.t: `trnbench serve` end to end with curl: the listening line, the
# model list, a streamed completion of token ids (exactly max_tokens content chunks, a
# usage chunk, [DONE]), a streamed chat, a whole completion, bad requests (400, 404,
# 405) answered OpenAI-style with the server still up, refused options (exit 2),
# SIGTERM (exit 0), and --engine cuda: exit 1 with the reason where there is no GPU
# (TRNBENCH_CUDA=0 always; on a GPU machine the plain run serves instead). Needs TB_BIN,
# TB_SRCDIR and TB_BUILDDIR (make check sets them).

. "${TB_SRCDIR:-.}/tests/cli/tap.sh"
tmp="$TB_BUILDDIR/tests/tmp/cli_serve"

# serve_up OUT ERR TRIES ENGINE SEQS: trnbench serve of llama-tiny on a free port in the
# background (stdout to OUT, stderr to ERR); pid set, and port once its listening line
# names the engine and max-num-seqs (polled TRIES times 0.1 s; empty if it ended first)
serve_up() {
    o=$1 e=$2 tries=$3 engine=$4 seqs=$5
    "$TB_BIN" serve --model llama-tiny --port 0 --engine "$engine" --max-num-seqs "$seqs" >"$o" 2>"$e" &
    pid=$!
    port=
    for _ in $(seq 1 "$tries"); do
        port=$(sed -n "s|^trnbench serve: listening on http://127\.0\.0\.1:\([0-9]*\)/v1 (model llama-tiny, engine $engine, max-num-seqs $seqs)\$|\1|p" "$o")
        [ -n "$port" ] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
}
rm -rf "$tmp" && mkdir -p "$tmp"

if ! command -v curl >/dev/null 2>&1; then
    echo "1..0 # SKIP the curl program is not installed"
    exit 0
fi

echo "1..35"

# ---- refused options: exit 2, the option named ----
"$TB_BIN" serve --model llama-tiny --max-num-seqs 1099511627776 >/dev/null 2>"$tmp/opt.err"
check "--max-num-seqs 2^40 refused with exit 2" test $? -eq 2
check "the message names --max-num-seqs" grep -q -- '--max-num-seqs' "$tmp/opt.err"
"$TB_BIN" serve --model llama-tiny --port 70000 >/dev/null 2>"$tmp/opt.err"
check "--port 70000 refused with exit 2" test $? -eq 2
check "the message names --port" grep -q -- '--port' "$tmp/opt.err"
"$TB_BIN" serve --model llama-tiny --engine tpu >/dev/null 2>"$tmp/opt.err"
check "--engine tpu refused with exit 2" test $? -eq 2
check "the message lists the engines" grep -q "option '--engine': 'tpu' is not cpu, cuda or instant" "$tmp/opt.err"

pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; }
trap cleanup EXIT

# ---- --engine cuda where there is no GPU: exit 1 with the reason, no crash ----
TRNBENCH_CUDA=0 "$TB_BIN" serve --model llama-tiny --engine cuda --port 0 >/dev/null 2>"$tmp/cuda.err"
check "--engine cuda with TRNBENCH_CUDA=0: exit 1" test $? -eq 1
check "the message says why" \
    test "$(cat "$tmp/cuda.err")" = "trnbench serve: --engine cuda: disabled (TRNBENCH_CUDA=0)"
# the emulator is for tests: trnbench serve refuses it (or sees no driver first)
TRNBENCH_CUDA_PLUGIN="$TB_BUILDDIR/lib/libtrnbench-cuemu.so" \
    "$TB_BIN" serve --model llama-tiny --engine cuda --port 0 >/dev/null 2>"$tmp/cuda.err"
check "--engine cuda on the CUDA emulator: exit 1" test $? -eq 1
check "the message says why (no driver, or the emulator is for tests)" \
    grep -Eq '^trnbench serve: --engine cuda: (no NVIDIA driver|the CUDA emulator .* is for tests|CUDA plugin .* not found)' "$tmp/cuda.err"
# this machine as it is: a GPU serves (a completion, then SIGTERM), else exit 1 with why
serve_up "$tmp/cuda.out" "$tmp/cuda.err" 600 cuda 2
if [ -n "$port" ]; then
    code=$(curl -s --max-time 60 -o "$tmp/cuda.sse" -w '%{http_code}' -H 'Content-Type: application/json' \
        -d '{"prompt":[1,2,3],"max_tokens":3,"stream":true}' "http://127.0.0.1:$port/v1/completions")
    kill -TERM "$pid"
    wait "$pid"
    st=$?
    check "--engine cuda on this GPU: a streamed completion of 3 tokens, then exit 0 on SIGTERM" \
        test "$code" = 200 -a "$(grep -c '"text":" t[0-9]*"' "$tmp/cuda.sse")" -eq 3 -a "$st" -eq 0
else
    wait "$pid"
    st=$?
    check "--engine cuda without a GPU: exit 1 with the reason" \
        test "$st" -eq 1 -a "$(grep -c '^trnbench serve: --engine cuda: .' "$tmp/cuda.err")" -eq 1
    sed 's/^/# /' "$tmp/cuda.err"
fi
pid=

# ---- the server ----
serve_up "$tmp/out" "$tmp/err" 100 cpu 4
check "the listening line names the address, model, engine and max-num-seqs" test -n "$port"
if [ -z "$port" ]; then
    sed 's/^/# /' "$tmp/err"
    exit 0
fi
url="http://127.0.0.1:$port"
post() { # post PATH BODY OUTFILE: the HTTP status on stdout
    curl -s --max-time 20 -o "$3" -w '%{http_code}' -H 'Content-Type: application/json' \
        -d "$2" "$url$1"
}

curl -s --max-time 10 "$url/v1/models" >"$tmp/models"
check "GET /v1/models lists llama-tiny" grep -q '"id":"llama-tiny"' "$tmp/models"
check "GET /health is 200" test "$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' "$url/health")" = 200

# streamed completion of token ids
code=$(post /v1/completions '{"model":"llama-tiny","prompt":[1,2,3,4],"max_tokens":5,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}' "$tmp/sse")
check "streamed completion: 200" test "$code" = 200
check "exactly 5 content chunks" test "$(grep -c '"text":" t[0-9]*"' "$tmp/sse")" -eq 5
check "the last content chunk has finish_reason length" \
    test "$(grep '"text":' "$tmp/sse" | tail -1 | grep -c '"finish_reason":"length"')" -eq 1
check "a usage chunk with completion_tokens 5" \
    grep -q '"usage":{"prompt_tokens":4,"completion_tokens":5,"total_tokens":9}' "$tmp/sse"
check "every chunk carries t_sent_ns" test "$(grep -c '"t_sent_ns":[0-9]' "$tmp/sse")" -eq 6
check "the stream ends with [DONE]" test "$(grep -v '^$' "$tmp/sse" | tail -1)" = "data: [DONE]"

# streamed chat
code=$(post /v1/chat/completions '{"model":"llama-tiny","messages":[{"role":"user","content":"hello there world"}],"max_tokens":3,"stream":true}' "$tmp/chat")
check "streamed chat: 200, 3 chat.completion.chunk deltas" \
    test "$code" = 200 -a "$(grep -c '"object":"chat.completion.chunk".*"delta":{.*"content":" t' "$tmp/chat")" -eq 3
check "the first chat chunk names the assistant" \
    test "$(grep -m1 '"delta"' "$tmp/chat" | grep -c '"role":"assistant"')" -eq 1

# whole completion
code=$(post /v1/completions '{"model":"llama-tiny","prompt":"one two three","max_tokens":4}' "$tmp/whole")
check "non-streaming completion: 200 with 4 tokens of text" \
    test "$code" = 200 -a "$(grep -c '"text":" t[0-9]* t[0-9]* t[0-9]* t[0-9]*"' "$tmp/whole")" -eq 1
check "non-streaming completion: usage" grep -q '"completion_tokens":4' "$tmp/whole"

# bad requests
code=$(post /v1/completions '{"model": "llama-tiny", "prompt": [1,' "$tmp/bad")
check "bad JSON: 400 with an error object" test "$code" = 400 -a "$(grep -c '"error":{"message"' "$tmp/bad")" -eq 1
code=$(post /v1/completions '{"model":"gpt-9","prompt":[1]}' "$tmp/bad")
check "unknown model: 404" test "$code" = 404 -a "$(grep -c '"param":"model"' "$tmp/bad")" -eq 1
code=$(post /v1/completions '{"model":"llama-tiny","prompt":[1,256]}' "$tmp/bad")
check "token id outside the vocabulary: 400" test "$code" = 400 -a "$(grep -c 'vocabulary' "$tmp/bad")" -eq 1
code=$(post /v1/completions '{"model":"llama-tiny","prompt":[1],"max_tokens":"x"}' "$tmp/bad")
check "max_tokens of the wrong type: 400" test "$code" = 400
code=$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' "$url/v1/completions")
check "GET on a POST path: 405" test "$code" = 405
head -c 17000000 /dev/zero | tr '\0' ' ' >"$tmp/big.json"
code=$(curl -s --max-time 20 -o "$tmp/bad" -w '%{http_code}' --data-binary @"$tmp/big.json" "$url/v1/completions")
check "a 17 MB body: 413" test "$code" = 413
rm -f "$tmp/big.json"
check "the server still answers after the bad requests" \
    test "$(post /v1/completions '{"prompt":[7],"max_tokens":2}' "$tmp/after")" = 200

# SIGTERM
kill -TERM "$pid"
wait "$pid"
st=$?
pid=
check "SIGTERM: exit status 0" test "$st" -eq 0

# ---- the instant engine ----
serve_up "$tmp/out" "$tmp/err" 100 instant 16
url="http://127.0.0.1:$port"
code=$(post /v1/completions '{"prompt":[9,9,9],"max_tokens":3,"stream":true}' "$tmp/inst")
check "instant engine: tokens (prompt length + i) % vocab" \
    test "$code" = 200 -a "$(grep -o '"text":" t[0-9]*"' "$tmp/inst" | tr '\n' ,)" = '"text":" t3","text":" t4","text":" t5",'
check "instant engine: chunks carry t_sent_ns" test "$(grep -c '"t_sent_ns":[0-9]' "$tmp/inst")" -eq 3
kill -INT "$pid"
wait "$pid"
st=$?
pid=
check "SIGINT: exit status 0" test "$st" -eq 0

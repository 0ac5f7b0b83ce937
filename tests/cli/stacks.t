#!/bin/sh
# tests/cli/stacks.t: software stacks (issue 33 point 3) as a user meets them: a scenario
# row's `software` column, a suite's predict key and `compare --software`. Under a stack
# of speed s a memory-bound batch-1 decode on one GPU takes exactly 1/s of the
# reference's TPOT; the run id, the assumptions and the report say which stack; an
# unknown stack, or one the target's family has no figure for, is refused with what the
# table has (exit 2 and nothing written for compare and a suite).

. "${TB_SRCDIR:-.}/tests/cli/tap.sh"
tmp="$TB_BUILDDIR/tests/tmp/cli_stacks"
rm -rf "$tmp" && mkdir -p "$tmp"

field() { csv_cell "$1" "$3" id="$2"; } # field FILE ID NAME
has() { grep -qF -- "$2" "$1"; }

echo "1..15"

# the table's vllm speed on nvidia serving, as the file states it
speed=$(csv_cell "$TB_SRCDIR/pricing/stacks.csv" speed software=vllm family=nvidia)
d="p5.48xlarge,1,1,llama-3.1-8b,decode,bf16,512,128,1,1,tpot_ms,ms"
cat >"$tmp/sc.csv" <<CSV
id,target,instances,chips,model,phase,precision,seq_in,seq_out,batch,tp,metric,unit,software
none,$d,
ref,$d,tensorrt-llm
vllm,$d,vllm
v12,$d,tensorrt-llm@1.2
bad,$d,fastllm
inf2,inf2.48xlarge,1,1,llama-3.1-8b,decode,bf16,512,128,1,1,tpot_ms,ms,torchtitan
b200,p6-b200.48xlarge,1,1,llama-3.1-8b,decode,bf16,512,128,1,1,tpot_ms,ms,vllm
CSV
"$TB_BIN" predict --scenarios "$tmp/sc.csv" >"$tmp/out.csv" 2>"$tmp/err"
check "predict exits 0" test $? -eq 0
b=$(field "$tmp/out.csv" none predicted)
v=$(field "$tmp/out.csv" vllm predicted)
check "vllm's TPOT is the reference's over its speed $speed ($b / $speed = $v ms)" \
    perl -e 'exit !(abs($ARGV[0] / $ARGV[2] - $ARGV[1]) < 1e-3 * $ARGV[1])' "$b" "$v" "$speed"
check "the reference stack named is the same as none ($(field "$tmp/out.csv" ref predicted) ms)" \
    test "$(field "$tmp/out.csv" ref predicted)" = "$b"
check "the vllm row's assumptions begin with the stack and its rows" \
    sh -c "echo \"\$0\" | grep -q '^assumes software vllm: $speed x the speed of tensorrt-llm (stacks.csv line [0-9]*, rows P2032 P2033)'" \
    "$(field "$tmp/out.csv" vllm assumptions)"
check "a version without a row is taken as its nearest listed release" \
    sh -c "echo \"\$0\" | grep -q '^assumes software tensorrt-llm@1.2, no row of its own, taken as tensorrt-llm@1: '" \
    "$(field "$tmp/out.csv" v12 assumptions)"
check "an unknown stack: no prediction, the field and the family's stacks named" \
    sh -c "test -z '$(field "$tmp/out.csv" bad predicted)' && echo \"\$0\" | grep -q \"^field 'software': unknown software 'fastllm' for nvidia serving work; stacks.csv has: tensorrt-llm (the reference)\"" \
    "$(field "$tmp/out.csv" bad why)"
check "a stack with no figure for the family: refused, saying so" \
    sh -c "echo \"\$0\" | grep -q \"software 'torchtitan' has no figure for neuron-v2 serving work\"" \
    "$(field "$tmp/out.csv" inf2 why)"

check "a speed holds for the chips its rows ran on: vllm (H100 rows) on a B200 is refused" \
    sh -c "echo \"\$0\" | grep -q \"software 'vllm' has no figure for nvidia serving work\"" \
    "$(field "$tmp/out.csv" b200 why)"

# ---- a suite's predict line ----
line="predict target=p5.48xlarge model=llama-3.1-8b phase=decode seq_in=512 seq_out=128 batch=1 tp=1 precision=bf16"
printf 'suite sw\n%s\n%s software=vllm\n' "$line" "$line" >"$tmp/ok.suite"
"$TB_BIN" run --suite "$tmp/ok.suite" --out "$tmp/ok" >/dev/null 2>"$tmp/ok.err"
check "a suite asks for a stack: two runs, not a repeat (exit $?)" \
    test "$(grep -c '^trnbench run: \[modeled' "$tmp/ok.err")" -eq 2
sid=model:p5.48xlarge/llama-3.1-8b/decode/b1/in512/out128/bf16
v1=$(csv_cell "$tmp/ok/results.csv" value run_id=$sid/sw-vllm metric=tpot_ms)
check "the suite's vllm run has its own id and the table's TPOT ($v1 = $v)" test "$v1" = "$v"
"$TB_BIN" report --out "$tmp/rep" "$tmp/ok/results.csv" >/dev/null 2>"$tmp/rep.err"
check "the report names the run that assumes a stack" \
    has "$tmp/rep/report.md" "1 modeled run assumes a software stack other than their chip family's reference"
printf 'suite bad\n%s software=Fast_LLM\n' "$line" >"$tmp/bad.suite"
"$TB_BIN" run --suite "$tmp/bad.suite" --out "$tmp/bad" >/dev/null 2>"$tmp/bad.err"
rc=$?
check "a malformed stack key in a suite: exit 2, file, line and field, nothing written (exit $rc)" \
    sh -c "test $rc -eq 2 && grep -qF \"bad.suite: line 2: field 'software': 'Fast_LLM'\" '$tmp/bad.err' && test ! -e '$tmp/bad/results.csv'"

# ---- compare ----
"$TB_BIN" compare --model llama-3.1-8b --phase serve --targets p5.48xlarge,trn2.48xlarge \
    --seq-in 1024 --seq-out 256 --batch 1 --software vllm --out "$tmp/cmp" >"$tmp/cmp.out" 2>"$tmp/cmp.err"
check "compare --software vllm on an H100 and a Trainium2 (exit $?)" \
    test "$(grep -c 'sw-vllm' "$tmp/cmp/results.csv")" -gt 0
check "both targets' runs carry the stack in their id" \
    sh -c "grep -q 'model:p5.48xlarge/.*sw-vllm' '$tmp/cmp/results.csv' && grep -q 'model:trn2.48xlarge/.*sw-vllm' '$tmp/cmp/results.csv'"
"$TB_BIN" compare --model llama-3.1-8b --phase serve --targets p5.48xlarge,inf2.48xlarge \
    --seq-in 1024 --seq-out 256 --batch 1 --software vllm --out "$tmp/cmp2" >/dev/null 2>"$tmp/cmp2.err"
rc=$?
check "compare --software vllm with an Inferentia2 (no vllm figure): exit 2, said, nothing written (exit $rc)" \
    sh -c "test $rc -eq 2 && grep -qF \"software 'vllm' has no figure for neuron-v2 serving work\" '$tmp/cmp2.err' && test ! -e '$tmp/cmp2'"

#!/bin/sh
# tests/cli/peer-script.t: the PyTorch peer script's own tests
# (tests/peers/pytorch_llama_test.py, TAP): its .model parser gives llama-3.2-1b's
# published parameter count (1.24e9 within 1%) and every published count, its FLOPs are
# trnbench's, and where torch imports (on the CPU) its KV cache and training step are
# sound. Needs python3; skipped with the reason without it.

: "${TB_SRCDIR:=.}"
if ! command -v python3 >/dev/null 2>&1; then
    echo "1..0 # SKIP no python3"
    exit 0
fi
exec python3 "$TB_SRCDIR/tests/peers/pytorch_llama_test.py"

#!/bin/sh
# tests/cli/peer-script.t: the PyTorch peer script's own tests
# (tests/peers/pytorch_llama_test.py, TAP): its .model parser gives llama-3.2-1b's
# published parameter count (1.24e9 within 1%) and every published count, its FLOPs are
# trnbench's, and where torch imports (on the CPU) its KV cache and training step are
# sound. It runs under the first interpreter that imports torch, as train-script.t does:
# python3 on the PATH, else Debian's /usr/bin/python3 (a pyenv or venv python3 first on
# the PATH does not see python3-torch, and the torch checks were skipped in CI for that);
# without torch anywhere, python3 runs the parser checks and skips the rest with the
# reason. Needs python3.

. "${TB_SRCDIR:-.}/tests/cli/tap.sh"
exec_torch_python "$TB_SRCDIR/tests/peers/pytorch_llama_test.py"

#!/bin/sh
# tests/cli/train-script.t: the PyTorch training script's own tests
# (tests/peers/llama_train_test.py, TAP): usage errors, its JSON lines, the loss falling on
# llama-tiny in 8 CPU steps, and 2 processes under torchrun. It runs under the first
# interpreter that imports torch: python3 on the PATH, else Debian's /usr/bin/python3 (a
# pyenv or venv python3 first on the PATH does not see python3-torch); without torch the
# training checks are skipped with the reason. Needs python3.

. "${TB_SRCDIR:-.}/tests/cli/tap.sh"
exec_torch_python "$TB_SRCDIR/tests/peers/llama_train_test.py"

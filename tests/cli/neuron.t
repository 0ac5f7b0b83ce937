#!/bin/sh
# tests/cli/neuron.t: `trnbench detect` on a simulated trn2.48xlarge (tests/data/platform_trn2
# through TRNBENCH_TEST_PLATFORM, with the Neuron SDK's package metadata in the tree)
# with stand-in neuron-ls scripts on PATH that print fixtures written from the Neuron LS
# User Guide (tests/data/neuron/README.md): the devices neuron-ls lists, the SDK's
# versions, the sysfs facts and the reason when neuron-ls is missing, fails or hangs
# (stopped at --timeout), and a stand-in refused outside tests (no TRNBENCH_TEST=1), as
# the simulated platform is.

. "${TB_SRCDIR:-.}/tests/cli/tap.sh"
tmp="$TB_BUILDDIR/tests/tmp/cli_neuron"
rm -rf "$tmp" && mkdir -p "$tmp/bin"
trn2="$TB_SRCDIR/tests/data/platform_trn2"
fixtures="$TB_SRCDIR/tests/data/neuron"
unset VIRTUAL_ENV

# stand_in BODY: the stand-in neuron-ls in $tmp/bin runs the shell script BODY
stand_in() {
    printf '#!/bin/sh\n%s\n' "$1" >"$tmp/bin/neuron-ls" && chmod +x "$tmp/bin/neuron-ls"
}
# detect NAME [ARGS...]: detect on the simulated trn2 in a test, the stand-ins on PATH;
# stdout in $tmp/NAME, stderr in NAME.err, the exit status in NAME.rc
detect() {
    n=$1
    shift
    PATH="$tmp/bin:/usr/bin:/bin" TRNBENCH_TEST=1 TRNBENCH_TEST_PLATFORM="$trn2" \
        "$TB_BIN" detect "$@" >"$tmp/$n" 2>"$tmp/$n.err"
    echo $? >"$tmp/$n.rc"
}
# value FILE KEY: the value of KEY in detect's text output
value() { sed -n "s/^$2  *//p" "$1"; }
has_line() { grep -qxF -- "$2" "$1"; }

echo "1..34"

# ---- neuron-ls lists the devices ----
stand_in "cat '$fixtures/ls-trn2.json'"
detect ls
check "detect with a stand-in neuron-ls: exit 0" test "$(cat "$tmp/ls.rc")" = 0
check "the devices come from it, and it says it is a stand-in" \
    test "$(value "$tmp/ls" neuron_source)" = "neuron-ls ($tmp/bin/neuron-ls), a test stand-in"
check "no reason printed for not using it" sh -c "! grep -q '^neuron_ls_not_used' '$tmp/ls'"
check "16 devices, 64 logical NeuronCores, their memory ($(value "$tmp/ls" neuron))" \
    test "$(value "$tmp/ls" neuron)" = "16 Trainium2 devices, 64 NeuronCores (logical, LNC 2), 1536 GiB device memory (neuron-ls)"
check "the logical NeuronCore configuration" test "$(value "$tmp/ls" neuron_lnc_config)" = 2
check "  read from neuron-ls, said so" \
    test "$(value "$tmp/ls" neuron_lnc_source)" = "LNC 2 as neuron-ls states it (logical_neuroncore_config)"
(NEURON_LOGICAL_NC_CONFIG=1 && export NEURON_LOGICAL_NC_CONFIG && detect lsenv)
check "  neuron-ls's LNC kept over NEURON_LOGICAL_NC_CONFIG=1, the difference said" \
    test "$(value "$tmp/lsenv" neuron_lnc_source)" = "LNC 2 as neuron-ls states it (logical_neuroncore_config); NEURON_LOGICAL_NC_CONFIG=1 here differs"
check "one line per device" test "$(grep -c '^neuron_device_[0-9]' "$tmp/ls")" = 16
check "device 0: cores, memory, PCI, links, its process" \
    test "$(value "$tmp/ls" neuron_device_0)" = "4 NeuronCores, 96 GiB, PCI cc:00.0, linked to 12 3 4 1, 1 process (runtime 2.0.0)"
check "device 15 last" \
    test "$(grep '^neuron_device_' "$tmp/ls" | tail -1 | cut -d' ' -f1)" = neuron_device_15
check "the sysfs facts still printed beside it" has_line "$tmp/ls" "neuron_devices       16"

# ---- the SDK's versions, from the tree's package metadata ----
check "the SDK line" \
    test "$(value "$tmp/ls" neuron_sdk)" = "Neuron SDK: neuronx-cc 2.27.5334.0, torch-neuronx 2.9.0.2.15.32035, runtime 2.34.10.0, collectives 2.34.10.0, tools 2.32.28.0, driver 2.30.2.0"
check "the Python environment it read" \
    test "$(value "$tmp/ls" neuron_python_env)" = "/opt/aws_neuronx_venv_pytorch_2_9/lib/python3.12/site-packages (a Neuron DLAMI environment)"
check "the compiler" test "$(value "$tmp/ls" sdk_neuronx_cc)" = "2.27.5334.0 (neuronx-cc)"
check "the runtime (dpkg)" test "$(value "$tmp/ls" sdk_runtime)" = "2.34.10.0 (aws-neuronx-runtime-lib)"
check "a part not installed: not found" \
    test "$(value "$tmp/ls" sdk_vllm_neuron)" = "not found (vllm-neuron)"

detect csv --format csv
check "csv: each device a row" \
    has_line "$tmp/csv" 'neuron_device_15,"4 NeuronCores, 96 GiB, PCI f7:00.0, linked to 11 14 3 12, 1 process (runtime 2.0.0)"'

# ---- the sysfs facts, and why not neuron-ls ----
if [ -x /opt/aws/neuron/bin/neuron-ls ]; then
    echo "ok 18 # SKIP this machine has /opt/aws/neuron/bin/neuron-ls"
    echo "ok 19 # SKIP this machine has /opt/aws/neuron/bin/neuron-ls"
    tap_n=19
else
    rm -f "$tmp/bin/neuron-ls"
    detect none
    check "no neuron-ls: the sysfs facts" \
        test "$(value "$tmp/none" neuron)" = "16 Trainium2 devices, 128 NeuronCores (sysfs)"
    check "  and why" \
        test "$(value "$tmp/none" neuron_ls_not_used)" = "no neuron-ls on PATH or in /opt/aws/neuron/bin"
fi

stand_in "echo 'level=fatal msg=\"failed to discover Neuron devices\"' >&2; exit 1"
detect fails
check "a failing neuron-ls: exit 0" test "$(cat "$tmp/fails.rc")" = 0
check "  the reason, with its message" \
    test "$(value "$tmp/fails" neuron_ls_not_used)" = "'$tmp/bin/neuron-ls --json-output' exited with status 1: level=fatal msg=\"failed to discover Neuron devices\""
check "  the sysfs facts" test "$(value "$tmp/fails" neuron_source)" = sysfs
check "  the LNC guessed: the SDK's default on Trainium2" \
    sh -c 'test "$(sed -n "s/^neuron_lnc_config  *//p" "$0")" = 2 &&
           test "$(sed -n "s/^neuron_lnc_source  *//p" "$0")" = "LNC 2 guessed: the Neuron SDK'"'"'s default on Trainium2 (neuron-ls stated none, NEURON_LOGICAL_NC_CONFIG unset)"' "$tmp/fails"
(NEURON_LOGICAL_NC_CONFIG=1 && export NEURON_LOGICAL_NC_CONFIG && detect failsenv)
check "  or NEURON_LOGICAL_NC_CONFIG's, said so" \
    sh -c 'test "$(sed -n "s/^neuron_lnc_config  *//p" "$0")" = 1 &&
           test "$(sed -n "s/^neuron_lnc_source  *//p" "$0")" = "LNC 1 guessed from NEURON_LOGICAL_NC_CONFIG (neuron-ls stated none)"' "$tmp/failsenv"

stand_in "cat '$fixtures/ls-truncated.json'"
detect cut
check "truncated output: the reason" \
    test "$(value "$tmp/cut" neuron_ls_not_used)" = "'$tmp/bin/neuron-ls --json-output' printed no device list: not JSON: line 45 column 8: string or '}' expected near end of file"

stand_in "sleep 30"
start=$(date +%s)
detect hang --timeout 1
secs=$(($(date +%s) - start))
check "a hanging neuron-ls: exit 0" test "$(cat "$tmp/hang.rc")" = 0
check "  stopped at --timeout ($secs s)" test "$secs" -le 4
check "  the reason" \
    test "$(value "$tmp/hang" neuron_ls_not_used)" = "'$tmp/bin/neuron-ls --json-output' timed out after 1 s"

stand_in "exit 3"
detect root --root "$trn2"
check "--root DIR (not simulated): neuron-ls not run, and why" \
    test "$(value "$tmp/root" neuron_ls_not_used)" = "not run: the facts come from the tree '$trn2', and neuron-ls would describe this machine"

detect badt --timeout 0
check "--timeout 0: exit 2" test "$(cat "$tmp/badt.rc")" = 2
check "  saying why" \
    has_line "$tmp/badt.err" "trnbench detect: option '--timeout': '0' is not a number from 0.001 to 3600"

# ---- a stand-in refused outside tests ----
stand_in "cat '$fixtures/ls-trn2.json'"
PATH="$tmp/bin:/usr/bin:/bin" "$TB_BIN" detect >"$tmp/refused" 2>"$tmp/refused.err"
check "a stand-in without TRNBENCH_TEST=1: exit 2" test $? -eq 2
check "  saying why" \
    has_line "$tmp/refused.err" "trnbench detect: '$tmp/bin/neuron-ls' is a stand-in for trnbench's own tests (its output carries \"trnbench_stand_in\"), refused outside them (no TRNBENCH_TEST=1): take it off PATH"
check "  and printing nothing" test ! -s "$tmp/refused"

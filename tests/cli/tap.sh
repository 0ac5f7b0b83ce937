# tests/cli/tap.sh: sourced by the shell tests in tests/cli/*.t (not a test itself).
# Sets the paths `make check` exports when they are missing, points the program at the
# source tree's data, and gives `check DESCRIPTION COMMAND...`, one numbered TAP line
# per call: ok when COMMAND succeeds.

: "${TB_SRCDIR:=.}"
: "${TB_BUILDDIR:=build}"
: "${TB_BIN:=$TB_BUILDDIR/bin/trnbench}"
export TRNBENCH_DATADIR="$TB_SRCDIR"

tap_n=0
check() {
    tap_n=$((tap_n + 1))
    tap_d=$1
    shift
    if "$@"; then echo "ok $tap_n - $tap_d"; else echo "not ok $tap_n - $tap_d"; fi
}

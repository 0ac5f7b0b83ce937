# tests/cli/mpi.sh: sourced after tap.sh by the tests that run real Open MPI jobs on this
# host (collectives.t, dp-train.t); not a test itself. Gives skip_n, mpi_skip (why the
# MPI checks cannot run here, empty when they can) and `mpi NP ARGS...` (bounded by
# $mpi_timeout seconds when set).

skip_n() { # N REASON
    i=0
    while [ $i -lt "$1" ]; do
        tap_n=$((tap_n + 1)); echo "ok $tap_n # skip $2"; i=$((i + 1))
    done
}
mpi_skip=
if ! command -v mpirun >/dev/null 2>&1; then
    mpi_skip="no mpirun (apt-get install openmpi-bin libopenmpi-dev)"
elif [ ! -e "$TB_BUILDDIR/lib/libtrnbench-mpi.so" ]; then
    mpi_skip="no $TB_BUILDDIR/lib/libtrnbench-mpi.so (mpicc not found at build time)"
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
mpi() { # NP ARGS...: mpirun with NP ranks on this host
    np=$1
    shift
    # Open MPI frees neither its own memory nor its components' at exit, and by then
    # those are unloaded: a sanitizer build's LeakSanitizer reports them as leaks of
    # "unknown module". The MPI jobs run without leak detection there (address and
    # undefined-behaviour errors stay fatal); the plain build is unchanged.
    # mpi_timeout=S: the job killed after S seconds (timeout's exit 124), for the tests
    # of a job that must end on its own
    # shellcheck disable=SC2086
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
        ${mpi_timeout:+timeout $mpi_timeout} mpirun -np "$np" --oversubscribe --bind-to none "$@"
}

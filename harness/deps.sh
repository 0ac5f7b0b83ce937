#!/bin/sh
# harness/deps.sh: make sure the Debian packages trnbench builds and runs with are
# present. As root with apt-get available it installs what is missing; otherwise it
# prints the exact apt-get line and fails. Called by the makefile once per build tree
# and by .ci/run.
#
#   gnuplot-nox     charts (SVG; PNG through pngcairo when the build of gnuplot has it)
#   libcsv-dev      CSV parsing (pricing tables, results, scenarios)
#   libopenblas-dev matrix products (cblas)
#   libpapi-dev     hardware counters (optional at run time: recorded when absent)
#   pkg-config      finds OpenBLAS and PAPI
#   perl            prove, the TAP runner of `make check`
#   g++             the CPU emulation of the CUDA plugin that tests/unit/gpu.c runs
#                   where there is no GPU (tests/cuemu/)
#   libcurl4-openssl-dev  the load client of the endpoint executor (HTTP, multi interface)
#   libjansson-dev  JSON: the OpenAI API's requests and responses, client and server
#   libmicrohttpd-dev     the HTTP server of `trnbench serve`
#   help2man        the man pages, one per command, made from its --help (without it
#                   make install ships the --help texts as plain files instead)
#
# With --optional (.ci/run passes it; the makefile does not) also what only some runs
# and tests use, never the build:
#
#   python3-torch   PyTorch for training through PyTorch on the CPU (`trnbench run
#                   --executor pytorch`, workloads/train/llama_train.py) and its tests
#                   (tests/cli/train.t, train-script.t: skipped without it); Debian 12's
#                   is torch 1.13.1, CPU only. On Neuron or a GPU use the vendor's
#                   torch (torch-neuronx, pip's CUDA build) instead
#   openmpi-bin, libopenmpi-dev  Open MPI: mpirun, and mpicc, which builds the MPI
#                   plugin build/lib/libtrnbench-mpi.so (`trnbench collectives
#                   --backend mpi`, tests/cli/collectives.t: skipped without it); never
#                   needed to build trnbench itself. A cluster's own MPI (Amazon's Open
#                   MPI with EFA) serves as well: put its mpicc first on PATH
set -u

optional=""
case "${1:-}" in
--optional) optional="python3-torch openmpi-bin libopenmpi-dev" ;;
"") ;;
*)
    echo "usage: harness/deps.sh [--optional]" >&2
    exit 2
    ;;
esac

need=""
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
for p in gnuplot-nox libcsv-dev libopenblas-dev libpapi-dev pkg-config perl g++ help2man \
         libcurl4-openssl-dev libjansson-dev libmicrohttpd-dev $optional; do
    # any gnuplot flavour will do
    if [ "$p" = gnuplot-nox ] && command -v gnuplot >/dev/null 2>&1; then continue; fi
    have_pkg "$p" || need="$need $p"
done
[ -z "$need" ] && exit 0

echo "trnbench: missing Debian packages:$need" >&2
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && [ "${TRNBENCH_NO_INSTALL:-}" != 1 ]; then
    echo "trnbench: installing them with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    # another apt-get (a second build tree's, an engineer's) holds dpkg's lock: wait
    # for it, up to 10 minutes, instead of failing the build at once
    lock="-o DPkg::Lock::Timeout=600"
    apt-get $lock install -y --no-install-recommends $need >&2 ||
        { apt-get $lock update >&2 && apt-get $lock install -y --no-install-recommends $need >&2; } || {
        echo "trnbench: apt-get failed; run: apt-get install -y --no-install-recommends$need" >&2
        exit 1
    }
    exit 0
fi
echo "trnbench: install them with:" >&2
echo "    sudo apt-get install -y --no-install-recommends$need" >&2
exit 1

#!/bin/sh
# tests/dist/netns.sh start|stop|exec|rsh DIR ...: two "hosts" for the tests
# (tests/cli/collectives-netns.t): two network namespaces joined by a veth pair, so that
# traffic between them crosses a real (virtual) link with a known, shaped bandwidth and
# delay, and Open MPI can launch one rank in each. Test scaffolding, not the product.
#
#   start DIR         create the namespaces (names derived from DIR: tbnet-<cksum>-a and
#                     -b, so tests in other folders do not clash), the veth pair
#                     (tbnet0 in each; addresses 10.77.0.1/24 in A, 10.77.0.2/24 in B:
#                     private, visible only inside the two namespaces), loopback up, and
#                     on each end's egress a tbf qdisc at TB_NETNS_RATE (default 100mbit,
#                     tc's units: mbit = 10^6 bit/s) and, where the kernel has netem, a
#                     netem delay of TB_NETNS_DELAY (default 2ms; 0: none) under it.
#                     Writes DIR/netns.env (sourceable: NS_A NS_B ADDR_A ADDR_B IF RATE
#                     RATE_BYTES_PER_S DELAY DELAY_US DELAY_WHY), DIR/hosts (an Open MPI
#                     hostfile: the two addresses, one slot each) and DIR/rsh (Open MPI's
#                     plm_rsh_agent: runs the daemon of a host in its namespace).
#                     Exit 0; 77 when this machine cannot (no ip or tc, no CAP_NET_ADMIN:
#                     unshare -n or ip netns add refused, no tbf), the reason on stderr;
#                     1 on another failure. What it made is removed when it fails.
#   stop DIR          end the processes left in the two namespaces (SIGTERM, then
#                     SIGKILL) and delete them (the veth pair goes with them). Idempotent.
#   exec DIR A|B CMD...  run CMD (argv, no shell) in host A's or B's namespace.
#   rsh DIR HOST CMD...  Open MPI's rsh agent: HOST is an address of DIR/hosts; CMD is
#                     the remote command line Open MPI builds for a remote shell, run as
#                     `sh -c` in that host's namespace, as ssh would on a real host.
#
# Delay: netem (CONFIG_NET_SCH_NETEM) is a module some kernels lack; without it the link
# is shaped in bandwidth only and DELAY=none, DELAY_WHY says why (the latency check of
# the test is then skipped with that reason, never failed).
set -u
cmd=${1:-}
dir=${2:-}
usage() {
    echo "usage: $0 start|stop DIR | exec DIR A|B CMD... | rsh DIR HOST CMD..." >&2
    exit 2
}
[ -n "$cmd" ] && [ -n "$dir" ] || usage
PATH="$PATH:/usr/sbin:/sbin"
mkdir -p "$dir" || exit 1
dir=$(cd "$dir" && pwd) || exit 1
tag=$(printf '%s' "$dir" | cksum | cut -d' ' -f1)
ns_a=tbnet-$tag-a
ns_b=tbnet-$tag-b
addr_a=10.77.0.1
addr_b=10.77.0.2
ifname=tbnet0

stop() {
    for ns in "$ns_a" "$ns_b"; do
        [ -e "/run/netns/$ns" ] || continue
        for sig in TERM KILL; do
            pids=$(ip netns pids "$ns" 2>/dev/null)
            [ -n "$pids" ] || break
            # shellcheck disable=SC2086 # one pid a word
            kill -"$sig" $pids 2>/dev/null
            i=0
            while [ -n "$(ip netns pids "$ns" 2>/dev/null)" ] && [ $i -lt 30 ]; do
                sleep 0.1
                i=$((i + 1))
            done
        done
        ip netns del "$ns" 2>/dev/null
    done
    rm -f "$dir/netns.env" "$dir/hosts" "$dir/rsh"
}

case $cmd in
stop)
    stop
    exit 0
    ;;
exec)
    [ $# -ge 4 ] || usage
    case $3 in A) ns=$ns_a ;; B) ns=$ns_b ;; *) usage ;; esac
    shift 3
    exec ip netns exec "$ns" "$@"
    ;;
rsh)
    [ $# -ge 4 ] || usage
    shift 2
    # Open MPI may put options before the host (plm_rsh_args); none are set here
    while [ $# -gt 0 ]; do case $1 in -*) shift ;; *) break ;; esac; done
    case ${1:-} in
    "$addr_a") ns=$ns_a ;;
    "$addr_b") ns=$ns_b ;;
    *)
        echo "netns.sh rsh: unknown host '${1:-}' (not in $dir/hosts)" >&2
        exit 255
        ;;
    esac
    shift
    exec ip netns exec "$ns" sh -c "$*"
    ;;
start) ;;
*) usage ;;
esac

unavailable() {
    echo "netns.sh: $*" >&2
    stop
    exit 77
}
failed() {
    echo "netns.sh: $*" >&2
    stop
    exit 1
}
# Open MPI splits plm_rsh_agent at spaces: DIR/rsh must be one word
case $dir in *[!A-Za-z0-9_./+-]*) failed "DIR '$dir': only letters, digits and _./+- (Open MPI's plm_rsh_agent is split at spaces)" ;; esac
rate=${TB_NETNS_RATE:-100mbit}
delay=${TB_NETNS_DELAY:-2ms}
case $rate in
*[!0-9]*kbit | *[!0-9]*mbit | *[!0-9]*gbit | '') failed "TB_NETNS_RATE '$rate': not N kbit, mbit or gbit" ;;
*kbit) rate_bps=$((${rate%kbit} * 1000 / 8)) ;;
*mbit) rate_bps=$((${rate%mbit} * 1000000 / 8)) ;;
*gbit) rate_bps=$((${rate%gbit} * 1000000000 / 8)) ;;
*) failed "TB_NETNS_RATE '$rate': not N kbit, mbit or gbit" ;;
esac
case $delay in
0) delay_us=0 ;;
*[!0-9]*ms | *[!0-9]*us | '') failed "TB_NETNS_DELAY '$delay': not N ms or us" ;;
*ms) delay_us=$((${delay%ms} * 1000)) ;;
*us) delay_us=${delay%us} ;;
*) failed "TB_NETNS_DELAY '$delay': not N ms or us" ;;
esac

command -v ip >/dev/null 2>&1 || unavailable "no ip (Debian: apt-get install iproute2)"
command -v tc >/dev/null 2>&1 || unavailable "no tc (Debian: apt-get install iproute2)"
unshare -n true 2>/dev/null || unavailable "unshare -n refused: no CAP_SYS_ADMIN/CAP_NET_ADMIN here"
stop # namespaces left by an earlier run in this folder
out=$(ip netns add "$ns_a" 2>&1) || unavailable "ip netns add refused: $out"
out=$(ip netns add "$ns_b" 2>&1) || unavailable "ip netns add refused: $out"
out=$(ip link add "$ifname" netns "$ns_a" type veth peer name "$ifname" netns "$ns_b" 2>&1) ||
    unavailable "no veth pair: $out"
for h in a b; do
    if [ $h = a ]; then ns=$ns_a addr=$addr_a; else ns=$ns_b addr=$addr_b; fi
    ip -n "$ns" link set lo up &&
        ip -n "$ns" addr add "$addr/24" dev "$ifname" &&
        ip -n "$ns" link set "$ifname" up || failed "could not set up $ifname in $ns"
    # tbf: the rate; its queue bounded at 50 ms; burst 32 KB (>= rate / HZ up to 1 gbit)
    out=$(ip netns exec "$ns" tc qdisc add dev "$ifname" root handle 1: tbf rate "$rate" \
        burst 32kb latency 50ms 2>&1) || unavailable "tc tbf refused: $out"
done
delay_why=
if [ "$delay_us" -gt 0 ]; then
    for ns in "$ns_a" "$ns_b"; do
        if ! out=$(ip netns exec "$ns" tc qdisc add dev "$ifname" parent 1:1 handle 10: netem \
            delay "$delay" 2>&1); then
            delay_why="no netem delay in this kernel (tc: $(echo "$out" | head -n 1))"
            break
        fi
    done
    if [ -n "$delay_why" ]; then
        for ns in "$ns_a" "$ns_b"; do
            ip netns exec "$ns" tc qdisc del dev "$ifname" parent 1:1 handle 10: 2>/dev/null
        done
        delay=none delay_us=0
    fi
else
    delay=none delay_why="TB_NETNS_DELAY=0"
fi
# the link answers: a TCP connection from B to A's address crosses it
if command -v python3 >/dev/null 2>&1; then
    ip netns exec "$ns_b" python3 -c 'import socket, sys
s = socket.socket(); s.settimeout(5)
try: s.connect((sys.argv[1], 9))
except ConnectionRefusedError: sys.exit(0)
except OSError as e: sys.exit("%s" % e)' "$addr_a" || failed "no TCP path from $ns_b to $addr_a"
fi

cat >"$dir/netns.env" <<ENV
NS_A=$ns_a
NS_B=$ns_b
ADDR_A=$addr_a
ADDR_B=$addr_b
IF=$ifname
RATE=$rate
RATE_BYTES_PER_S=$rate_bps
DELAY=$delay
DELAY_US=$delay_us
DELAY_WHY='$(echo "$delay_why" | tr -d "'")'
ENV
printf '%s slots=1\n%s slots=1\n' "$addr_a" "$addr_b" >"$dir/hosts"
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
printf '#!/bin/sh\nexec \047%s\047 rsh %s "$@"\n' "$self" "$dir" >"$dir/rsh"
chmod +x "$dir/rsh"
echo "netns.sh: $ns_a ($addr_a) <-> $ns_b ($addr_b) over $ifname: $rate, delay $delay"
exit 0

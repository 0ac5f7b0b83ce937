#!/bin/sh
# tests/cli/collectives-netns.t: `trnbench collectives --backend mpi` between two "hosts"
# (network namespaces, tests/dist/netns.sh) joined by a veth pair shaped with tc to a
# known rate (tbf, TB_NETNS_RATE: 100 Mbit/s) and, where the kernel has netem, a known
# delay (2 ms each way), so the traffic crosses a real (virtual) link: mpirun runs in
# host A and starts host B's Open MPI daemon through the rsh agent netns.sh writes.
# Checked: the reduced values (#wrong 0), the rows' nodes 2, ranks_per_node 1, link tcp;
# sendrecv's busbw at 4 MiB against the shaped rate (0.5x to 1.05x), its latency at
# 8 B against the delay; then `trnbench calibrate` with the link's rate stated
# (--host-net-gbit-per-s) gives the link's efficiency, and the model with that file
# predicts the measured busbw within 20 %. What this does not show: EFA, or two real
# machines (one kernel, one memory, one CPU under both ranks).
# Skips, with the reason, where MPI is missing or this machine cannot make namespaces
# (no CAP_NET_ADMIN, no ip or tc): never a failure for that.
. "${TB_SRCDIR:-.}/tests/cli/tap.sh"
. "$TB_SRCDIR/tests/cli/mpi.sh"

tmp=$TB_BUILDDIR/tests/tmp/collectives-netns
rm -rf "$tmp" && mkdir -p "$tmp"
echo "1..21"

# ---- the model of tcp between hosts (no namespace needed) ----
"$TB_BIN" predict --collective sendrecv --bytes 1073741824 --ranks 2 --nodes 2 --link tcp \
    >"$tmp/p.csv" 2>"$tmp/err"
check "predict: tcp across nodes without the hosts' network bandwidth: exit 2 naming the option" \
    sh -c 'test $0 = 2 && grep -q "state it (--host-net-gbit-per-s)" "$1"' $? "$tmp/err"
"$TB_BIN" predict --collective sendrecv --bytes 1073741824 --ranks 2 --nodes 2 --link tcp \
    --host-net-gbit-per-s 10 >"$tmp/p.csv" 2>"$tmp/err"
v=$(csv_cell "$tmp/p.csv" busbw_gbyte_per_s link=tcp)
check "predict: sendrecv 1 GiB over 10 Gbit/s x our host net_eff 0.25 = 0.3125 GB/s less the latency ($v)" \
    perl -e 'exit !($ARGV[0] < 0.3125 && $ARGV[0] > 0.3125 * 0.999)' "$v"
"$TB_BIN" predict --collective all-reduce --bytes 1073741824 --ranks 8 --nodes 2 --link tcp \
    --host-net-gbit-per-s 10 >"$tmp/p4.csv" 2>"$tmp/err"
v=$(csv_cell "$tmp/p4.csv" busbw_gbyte_per_s link=tcp)
check "predict: 4 ranks a host share its network: busbw 0.3125 / 4 ($v)" \
    perl -e 'exit !($ARGV[0] < 0.3125 / 4 && $ARGV[0] > 0.3125 / 4 * 0.999)' "$v"
"$TB_BIN" predict --collective all-reduce --bytes 1024 --ranks 2 --nodes 2 --link tcp \
    --host-net-gbit-per-s fast >/dev/null 2>"$tmp/err"
check "predict: a bad --host-net-gbit-per-s is a usage error naming it" \
    sh -c 'test $0 = 2 && grep -q "option .--host-net-gbit-per-s.: .fast. is not a number from 1e-6 to 1000000" "$1"' \
    $? "$tmp/err"

# ---- two hosts ----
why=$mpi_skip
net=$tmp/net
if [ -z "$why" ]; then
    TB_NETNS_RATE=100mbit TB_NETNS_DELAY=2ms sh "$TB_SRCDIR/tests/dist/netns.sh" start "$net" \
        >"$tmp/netns.out" 2>"$tmp/netns.err"
    rc=$?
    if [ $rc = 77 ]; then
        why="two hosts in namespaces: $(sed -n 's/^netns.sh: //p' "$tmp/netns.err" | head -n 1)"
    elif [ $rc != 0 ]; then
        echo "# netns.sh start failed ($rc):"
        sed 's/^/#   /' "$tmp/netns.err"
        why="netns.sh start failed"
    fi
fi
if [ -n "$why" ]; then
    skip_n 17 "$why"
    exit 0
fi
trap 'sh "$TB_SRCDIR/tests/dist/netns.sh" stop "$net"' EXIT
trap 'exit 1' INT TERM HUP
. "$net/netns.env"
rate=$RATE_BYTES_PER_S

# net_mpi LINKS OUT OP: mpirun in host A, one rank on each host, TCP over the veth only
# (Open MPI's out-of-band channel too); LINKS is btl_tcp_links, the TCP connections a
# pair of ranks opens
net_mpi() {
    links=$1 out=$2 op=$3
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" timeout 300 \
        sh "$TB_SRCDIR/tests/dist/netns.sh" exec "$net" A \
        mpirun -np 2 --hostfile "$net/hosts" --bind-to none --mca plm_rsh_agent "$net/rsh" \
        --mca oob_tcp_if_include 10.77.0.0/24 --mca btl tcp,self \
        --mca btl_tcp_if_include 10.77.0.0/24 --mca btl_tcp_links "$links" \
        -x TRNBENCH_DATADIR -x ASAN_OPTIONS \
        "$TB_BIN" collectives --backend mpi --op "$op" --min-bytes 8 --max-bytes 4M \
        --iters 6 --warmup 1 --out "$out" >"$tmp/$op.$links.out" 2>"$tmp/$op.$links.err"
}
# wrong FILE: the table's #wrong columns, summed (N/A: 0), or "none" without a table
wrong() {
    awk '!/^#/ && NF >= 13 { n++; s += $9 + ($13 == "N/A" ? 0 : $13) }
         END { print n ? s : "none" }' "$1"
}
# rows FILE: every mpi row says 2 nodes, 1 rank a node, link tcp; their count
rows() {
    perl -e '
        sub row { my @o; my $s = shift; chomp $s;
            while (length $s) { if ($s =~ s/^"((?:[^"]|"")*)"(,|$)//) { (my $x = $1) =~ s/""/"/g; push @o, $x }
                                elsif ($s =~ s/^([^,]*)(,|$)//) { push @o, $1 } else { last } }
            return @o }
        open my $h, "<", $ARGV[0] or die; my @h = row(scalar <$h>); my %c; @c{@h} = 0 .. $#h;
        my ($n, $bad) = (0, 0);
        while (<$h>) { my @r = row($_); next unless $r[$c{executor}] eq "mpi"; $n++;
            $bad++ unless $r[$c{nodes}] eq "2" && $r[$c{ranks_per_node}] eq "1" && $r[$c{link}] eq "tcp" }
        print $bad ? "bad" : $n' "$1"
}

net_mpi 2 "$tmp/r" sendrecv
rc=$?
check "sendrecv across the two hosts: exit 0" test $rc = 0
[ $rc = 0 ] || sed 's/^/#   /' "$tmp/sendrecv.2.err"
check "sendrecv: every value received right (#wrong $(wrong "$tmp/sendrecv.2.out"))" \
    test "$(wrong "$tmp/sendrecv.2.out")" = 0
n=$(rows "$tmp/r/results.csv")
check "sendrecv: 20 sizes x 3 metrics, each row nodes 2, ranks_per_node 1, link tcp ($n)" \
    test "$n" = 60
how=$(csv_cell "$tmp/r/results.csv" notes bytes=8 metric=latency_us | sed 's/.*(\(detected[^)]*\)).*/\1/')
check "sendrecv: the link detected, not stated ($how)" \
    sh -c 'case "$0" in "detected: 2 hosts"*) ;; *) exit 1 ;; esac' "$how"
bw=$(csv_cell "$tmp/r/results.csv" value bytes=4194304 metric=busbw_gbyte_per_s)
ratio=$(perl -e 'printf "%.3f", $ARGV[0] * 1e9 / $ARGV[1]' "$bw" "$rate")
check "sendrecv 4 MiB: busbw $bw GB/s against the link's $RATE ($rate B/s): $ratio x, in [0.5, 1.05]" \
    perl -e 'exit !($ARGV[0] >= 0.5 && $ARGV[0] <= 1.05)' "$ratio"
lat=$(csv_cell "$tmp/r/results.csv" value bytes=8 metric=latency_us)
if [ "$DELAY" = none ]; then
    skip_n 1 "the latency floor: $DELAY_WHY (8 B took $lat us)"
else
    check "sendrecv 8 B: latency $lat us at least the link's delay $DELAY ($DELAY_US us)" \
        perl -e 'exit !($ARGV[0] >= $ARGV[1])' "$lat" "$DELAY_US"
fi

net_mpi 2 "$tmp/r" all-reduce
rc=$?
check "all-reduce across the two hosts: exit 0" test $rc = 0
[ $rc = 0 ] || sed 's/^/#   /' "$tmp/all-reduce.2.err"
check "all-reduce: the reduced sums right, in and out of place (#wrong $(wrong "$tmp/all-reduce.2.out"))" \
    test "$(wrong "$tmp/all-reduce.2.out")" = 0
n=$(rows "$tmp/r/results.csv")
check "all-reduce: 20 sizes x 2 placements x 3 metrics more, nodes 2, rpn 1, tcp ($n)" \
    test "$n" = 180
arbw=$(csv_cell "$tmp/r/results.csv" value bytes=4194304 config=4194304B/outofplace \
    workload=collective/all-reduce metric=busbw_gbyte_per_s)
arratio=$(perl -e 'printf "%.3f", $ARGV[0] * 1e9 / $ARGV[1]' "$arbw" "$rate")
check "all-reduce 4 MiB: busbw $arbw GB/s, $arratio x the rate, in [0.5, 1.05]" \
    perl -e 'exit !($ARGV[0] >= 0.5 && $ARGV[0] <= 1.05)' "$arratio"

# Open MPI's default, one TCP connection between two ranks: sendrecv's two directions
# share it, and over this link it reaches about half the rate (0.43x here), where two
# connections (above) reach 0.87x: recorded, with a bound that only says the shaping held
net_mpi 1 "$tmp/r1" sendrecv
bw1=$(csv_cell "$tmp/r1/results.csv" value bytes=4194304 metric=busbw_gbyte_per_s)
ratio1=$(perl -e 'printf "%.3f", $ARGV[0] * 1e9 / $ARGV[1]' "${bw1:-0}" "$rate")
check "sendrecv 4 MiB over Open MPI's one TCP connection a pair: $bw1 GB/s, $ratio1 x the rate, in (0.2, 1.05]" \
    perl -e 'exit !($ARGV[0] > 0.2 && $ARGV[0] <= 1.05)' "$ratio1"

# ---- the link's efficiency, and the model with it ----
gbit=$(perl -e 'print $ARGV[0] * 8 / 1e9' "$rate")
"$TB_BIN" calibrate "$tmp/r/results.csv" --out "$tmp/eff.csv" >"$tmp/cal0.out" 2>"$tmp/cal0.err"
check "calibrate without the link's rate: exit 2, saying to state it" \
    sh -c 'test $0 = 2 && grep -q "host-net-gbit-per-s" "$1" && test ! -e "$2"' $? \
    "$tmp/cal0.err" "$tmp/eff.csv"
"$TB_BIN" calibrate "$tmp/r/results.csv" --host-net-gbit-per-s "$gbit" --out "$tmp/eff.csv" \
    >"$tmp/cal.out" 2>"$tmp/cal.err"
rc=$?
check "calibrate with --host-net-gbit-per-s $gbit: exit 0" test $rc = 0
[ $rc = 0 ] || sed 's/^/#   /' "$tmp/cal.err"
eff=$(csv_cell "$tmp/eff.csv" net_eff chip=host)
check "calibrate: the link's implied efficiency net_eff $eff (sendrecv $ratio, all-reduce $arratio) in [0.5, 1.05]" \
    perl -e 'exit !($ARGV[0] >= 0.5 && $ARGV[0] <= 1.05)' "$eff"
check "calibrate: its source names the stated network and the sweeps" \
    sh -c 'grep "^host," "$0" | grep -q "net_eff fitted (3 sweeps).*hosts. network $1 Gbit/s (stated"' \
    "$tmp/eff.csv" "$gbit"
# each op's bandwidth as calibrate takes it (the median busbw of the sweep's 3 largest
# sizes, 1, 2 and 4 MiB) against the model's at the same sizes, with the fitted file
med() { # the median of 3 numbers
    perl -e 'my @x = sort { $a <=> $b } @ARGV; print $x[1]' "$@"
}
err=
for op in sendrecv all-reduce; do
    ms= ps=
    for b in 1048576 2097152 4194304; do
        ms="$ms $(csv_cell "$tmp/r/results.csv" value bytes=$b config=${b}B/outofplace \
            workload=collective/$op metric=busbw_gbyte_per_s)"
        "$TB_BIN" predict --collective $op --bytes $b --ranks 2 --nodes 2 --link tcp \
            --host-net-gbit-per-s "$gbit" --efficiency "$tmp/eff.csv" >"$tmp/pred.$op.$b.csv" 2>&1
        ps="$ps $(csv_cell "$tmp/pred.$op.$b.csv" busbw_gbyte_per_s link=tcp)"
    done
    # shellcheck disable=SC2086 # three numbers, one a word
    m=$(med $ms) p=$(med $ps)
    e=$(perl -e 'printf "%+.1f", ($ARGV[1] / $ARGV[0] - 1) * 100' "$m" "${p:-0}")
    err="$err $op: measured $m, modeled $p GB/s ($e %);"
    eval "err_$(echo $op | tr -d -)=\$e"
done
# shellcheck disable=SC2154 # set by the eval above
check "the model with the calibrated file, each op's bandwidth within 20 %:$err" \
    perl -e 'exit !(abs($ARGV[0]) <= 20 && abs($ARGV[1]) <= 20)' -- "$err_sendrecv" "$err_allreduce"
"$TB_BIN" report --out "$tmp/report" --efficiency "$tmp/eff.csv" --host-net-gbit-per-s "$gbit" \
    "$tmp/r/results.csv" >/dev/null 2>"$tmp/report.err"
rc=$?
p=$(csv_cell "$tmp/pred.sendrecv.4194304.csv" busbw_gbyte_per_s link=tcp)
line=$(sed -n '/^### sendrecv over tcp: 2 ranks on 2 nodes/,/^#/p' "$tmp/report/report.md" 2>/dev/null |
    grep '^| 4 MiB | outofplace |')
check "report --efficiency --host-net-gbit-per-s: sendrecv over tcp modeled as predict does ($p GB/s at 4 MiB: $line)" \
    sh -c 'test $0 = 0 && echo "$1" | perl -ne "exit !(/^\| 4 MiB \| outofplace \| [^|]+ \| ([0-9.e+-]+) \|/ && abs(\$1 / \$ARGV[0] - 1) < 1e-3)" "$2"' \
    $rc "$line" "$p"

#!/bin/sh
# tests/slurm/cluster.sh start|stop|status|wait DIR [JOB SECONDS]: a one-machine Slurm cluster for the tests
# (tests/cli/slurm.t): slurmctld and slurmd on this host, listening on loopback
# (127.0.0.1) ports of their own, every file under DIR: slurm.conf, state, spool, logs,
# pid files. Clients reach it with SLURM_CONF=DIR/slurm.conf (printed by start).
#
#   start   write DIR/slurm.conf, start slurmctld and slurmd in the background, wait
#           (at most TB_SLURM_WAIT seconds, default 60) until sinfo shows the node idle.
#           Exit 0 when it is; else the daemons are stopped, exit 1, and the last log
#           lines say why.
#   stop    end the daemons whose pid files are in DIR (SIGTERM, then SIGKILL).
#   status  sinfo's line for the node.
#   wait    DIR JOB SECONDS: until squeue no longer lists JOB (polled every 0.5 s);
#           exit 0 when it left, else the job is cancelled and exit 1.
#
# Authentication: AuthType=auth/none with CredType=cred/none (Slurm 22.05 ships both
# plugins: /usr/lib/x86_64-linux-gnu/slurm-wlm/auth_none.so, cred_none.so), so no munge
# daemon or key is needed on a test machine; a real cluster uses munge. The node is
# named localhost (slurmd -N localhost); the controller host must be this machine's
# short host name (slurmctld refuses a SlurmctldHost that is not it), at 127.0.0.1.
# Ports: TB_SLURM_PORT (slurmctld; default 16817) and the next one (slurmd).
#
# TB_SLURM_NODES=N (default 1) above 1 starts N slurmd on this host, nodes tbnode1 ..
# tbnodeN, each on its own port (the ports after slurmctld's) with its own spool folder,
# log and pid file: Debian's Slurm is built with multiple slurmd per host (`scontrol
# show config` says MULTIPLE_SLURMD = Yes), so a job may span "nodes" that are all this
# machine. The names are Slurm's only (NodeAddr 127.0.0.1 is how to reach each); slurmctld
# refuses "localhost" among several nodes ("Duplicated NodeHostName").
set -u
cmd=${1:-}
dir=${2:-}
if [ -z "$cmd" ] || [ -z "$dir" ]; then
    echo "usage: $0 start|stop|status|wait DIR [JOB SECONDS]" >&2
    exit 2
fi
mkdir -p "$dir" || exit 1
dir=$(cd "$dir" && pwd) || exit 1
conf="$dir/slurm.conf"
export SLURM_CONF="$conf"

stop() {
    for f in "$dir"/slurmd.pid "$dir"/slurmd.*.pid "$dir"/slurmctld.pid; do
        [ -s "$f" ] || continue
        d=$(basename "$f")
        d=${d%%.*}
        pid=$(cat "$f")
        case $pid in '' | *[!0-9]*) continue ;; esac
        # only a pid that runs this daemon (a stale file may name another process)
        if [ "$(cat /proc/"$pid"/comm 2>/dev/null)" = "$d" ]; then
            kill -TERM "$pid" 2>/dev/null
            i=0
            while kill -0 "$pid" 2>/dev/null && [ $i -lt 50 ]; do
                sleep 0.1
                i=$((i + 1))
            done
            kill -KILL "$pid" 2>/dev/null
        fi
        rm -f "$f"
    done
}

case $cmd in
stop)
    stop
    exit 0
    ;;
status)
    sinfo -h -N -o '%N %T' 2>&1
    exit $?
    ;;
wait)
    job=${3:-} limit=${4:-}
    case $job$limit in '' | *[!0-9]*)
        echo "usage: $0 wait DIR JOB SECONDS" >&2
        exit 2
        ;;
    esac
    i=0
    while [ $i -lt $((limit * 2)) ]; do
        [ -z "$(squeue -h -j "$job" -o %i 2>/dev/null)" ] && exit 0
        sleep 0.5
        i=$((i + 1))
    done
    scancel "$job" 2>/dev/null
    exit 1
    ;;
start) ;;
*)
    echo "usage: $0 start|stop|status|wait DIR [JOB SECONDS]" >&2
    exit 2
    ;;
esac

for p in slurmctld slurmd sinfo; do
    command -v "$p" >/dev/null 2>&1 || PATH="$PATH:/usr/sbin:/sbin"
    if ! command -v "$p" >/dev/null 2>&1; then
        echo "cluster.sh: $p not installed (Debian: apt-get install slurm-wlm)" >&2
        exit 1
    fi
done
stop # a cluster left by an earlier run in this folder
port=${TB_SLURM_PORT:-16817}
nodes=${TB_SLURM_NODES:-1}
case $nodes in '' | *[!0-9]* | 0)
    echo "cluster.sh: TB_SLURM_NODES '$nodes' is not a count of nodes" >&2
    exit 2
    ;;
esac
cpus=$(nproc 2>/dev/null || echo 1)
host=$(hostname -s)
user=$(id -un)
mkdir -p "$dir/state" "$dir/spool" "$dir/log"
rm -rf "$dir/state"/* "$dir/spool"/*
cat >"$conf" <<CONF
# written by tests/slurm/cluster.sh: a one-machine cluster for the tests
ClusterName=trnbench-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/none
CredType=cred/none
StateSaveLocation=$dir/state
SlurmctldPidFile=$dir/slurmctld.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
CONF
names=""
if [ "$nodes" -eq 1 ]; then
    names=localhost
    cat >>"$conf" <<CONF
SlurmdSpoolDir=$dir/spool
SlurmdPidFile=$dir/slurmd.pid
SlurmdLogFile=$dir/log/slurmd.log
NodeName=localhost NodeAddr=127.0.0.1 NodeHostname=$host CPUs=$cpus State=UNKNOWN
CONF
else
    # several slurmd on this host: %n is each one's node name
    cat >>"$conf" <<CONF
SlurmdSpoolDir=$dir/spool/%n
SlurmdPidFile=$dir/slurmd.%n.pid
SlurmdLogFile=$dir/log/slurmd.%n.log
CONF
    k=1
    while [ $k -le "$nodes" ]; do
        name=tbnode$k
        names="$names${names:+,}$name"
        mkdir -p "$dir/spool/$name"
        echo "NodeName=$name NodeAddr=127.0.0.1 NodeHostname=$host Port=$((port + k)) CPUs=$cpus State=UNKNOWN" >>"$conf"
        k=$((k + 1))
    done
fi
echo "PartitionName=debug Nodes=$names Default=YES MaxTime=INFINITE State=UP" >>"$conf"

slurmctld -f "$conf" -i >"$dir/log/slurmctld.out" 2>&1 </dev/null
for name in $(echo "$names" | tr ',' ' '); do
    slurmd -f "$conf" -N "$name" >"$dir/log/slurmd.$name.out" 2>&1 </dev/null
done

# running: the daemon its pid file names, started from this folder's slurm.conf (not
# another cluster answering on the same port)
running() {
    pid=$(cat "$dir/$1.pid" 2>/dev/null)
    case $pid in '' | *[!0-9]*) return 1 ;; esac
    tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -q "^${1%%.*} -f $conf "
}
# every slurmd of the cluster running
slurmds() {
    [ "$nodes" -eq 1 ] && {
        running slurmd
        return
    }
    for name in $(echo "$names" | tr ',' ' '); do
        running "slurmd.$name" || return 1
    done
}

wait_s=${TB_SLURM_WAIT:-60}
i=0
state=""
while [ $i -lt $((wait_s * 2)) ]; do
    if [ $i -ge 10 ] && { ! running slurmctld || ! slurmds; }; then
        state="a daemon exited"
        break
    fi
    # every node idle: one line "idle" (sinfo groups the nodes of one state)
    state=$(sinfo -h -o '%T %D' 2>/dev/null)
    case $state in "idle $nodes" | "idle~ $nodes" | "idle* $nodes")
        running slurmctld && slurmds || {
            sleep 0.5
            i=$((i + 1))
            continue
        }
        echo "SLURM_CONF=$conf"
        exit 0
        ;;
    esac
    sleep 0.5
    i=$((i + 1))
done
echo "cluster.sh: the node is not idle after ${wait_s} s (state '${state:-none}'); last log lines:" >&2
tail -n 5 "$dir/log/slurmctld.log" "$dir/log"/slurmd*.log "$dir/log/slurmctld.out" "$dir/log"/slurmd*.out >&2 2>/dev/null
stop
exit 1

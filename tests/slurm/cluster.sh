#!/bin/sh
# tests/slurm/cluster.sh start|stop|status DIR: a one-machine Slurm cluster for the tests
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
#
# Authentication: AuthType=auth/none with CredType=cred/none (Slurm 22.05 ships both
# plugins: /usr/lib/x86_64-linux-gnu/slurm-wlm/auth_none.so, cred_none.so), so no munge
# daemon or key is needed on a test machine; a real cluster uses munge. The node is
# named localhost (slurmd -N localhost); the controller host must be this machine's
# short host name (slurmctld refuses a SlurmctldHost that is not it), at 127.0.0.1.
# Ports: TB_SLURM_PORT (slurmctld; default 16817) and the next one (slurmd).
set -u
cmd=${1:-}
dir=${2:-}
if [ -z "$cmd" ] || [ -z "$dir" ]; then
    echo "usage: $0 start|stop|status DIR" >&2
    exit 2
fi
mkdir -p "$dir" || exit 1
dir=$(cd "$dir" && pwd) || exit 1
conf="$dir/slurm.conf"
export SLURM_CONF="$conf"

stop() {
    for d in slurmd slurmctld; do
        f="$dir/$d.pid"
        [ -s "$f" ] || continue
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
start) ;;
*)
    echo "usage: $0 start|stop|status DIR" >&2
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
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
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
NodeName=localhost NodeAddr=127.0.0.1 NodeHostname=$host CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF

slurmctld -f "$conf" -i >"$dir/log/slurmctld.out" 2>&1 </dev/null
slurmd -f "$conf" -N localhost >"$dir/log/slurmd.out" 2>&1 </dev/null

# running: the daemon its pid file names, started from this folder's slurm.conf (not
# another cluster answering on the same port)
running() {
    pid=$(cat "$dir/$1.pid" 2>/dev/null)
    case $pid in '' | *[!0-9]*) return 1 ;; esac
    tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -q "^$1 -f $conf "
}

wait_s=${TB_SLURM_WAIT:-60}
i=0
state=""
while [ $i -lt $((wait_s * 2)) ]; do
    if [ $i -ge 10 ] && { ! running slurmctld || ! running slurmd; }; then
        state="a daemon exited"
        break
    fi
    state=$(sinfo -h -N -n localhost -o '%T' 2>/dev/null)
    case $state in idle*)
        running slurmctld && running slurmd || {
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
tail -n 5 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" "$dir/log/slurmctld.out" "$dir/log/slurmd.out" >&2 2>/dev/null
stop
exit 1

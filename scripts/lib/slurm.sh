# Helpers shared by scripts/slurm-local and scripts/cluster-sim (sourced, not run): pid files,
# stopping daemons, and the one munged both Slurms authenticate through.
# shellcheck shell=bash

# True when the pid in FILE is a live daemon named as the file is (slurmd-node01.pid: slurmd):
# after a restart the pid in a stale file may belong to anything. Reads /proc, so it also
# answers for a caller that is not root.
alive() {
    local pid comm name
    name="$(basename "$1" .pid)"
    # The daemon removes its pid file as it exits: gone between test and read is "not alive".
    pid="$(cat "$1" 2>/dev/null)" || return 1
    [ -n "$pid" ] && comm="$(cat "/proc/$pid/comm" 2>/dev/null)" || return 1
    [ "$comm" = "${name%%-*}" ]
}

# Stops the process whose pid is in FILE: TERM, then KILL after 5 s.
stop_pid() {
    local file="$1" pid
    alive "$file" || return 0
    pid="$(cat "$file" 2>/dev/null)" || return 0
    # Gone since alive looked (or already signalled by the caller and gone): done.
    kill "$pid" 2>/dev/null || return 0
    for _ in $(seq 1 50); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
}

# The machine's munged, started when none runs (creating /etc/munge/munge.key when missing).
# Returns 0 when it started one, 1 when one was already running.
start_munge() {
    if alive /run/munge/munged.pid; then
        return 1
    fi
    local key=/etc/munge/munge.key
    if [ ! -s "$key" ]; then
        mkdir -p /etc/munge
        if command -v mungekey >/dev/null 2>&1; then
            mungekey --create --keyfile="$key"
        else
            dd if=/dev/urandom bs=1 count=1024 of="$key" status=none
        fi
    fi
    install -d -o munge -g munge -m 0755 /run/munge
    install -d -o munge -g munge -m 0700 /var/lib/munge /var/log/munge
    chown munge:munge /etc/munge "$key"
    chmod 0700 /etc/munge
    chmod 0400 "$key"
    runuser -u munge -- /usr/sbin/munged
    munge -n | unmunge >/dev/null || die "munge does not round-trip a credential"
    return 0
}

# `slurmd -C`'s node description without its NodeName= and UpTime= (CPUs, sockets, cores,
# memory): a node configured with more than it has is drained as INVAL.
node_hardware() {
    local node
    node="$(slurmd -C | head -1)"
    case "$node" in
        NodeName=*) ;;
        *) die "slurmd -C did not describe this node: $node" ;;
    esac
    echo "${node#NodeName=* }"
}

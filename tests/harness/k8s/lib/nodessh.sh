# What the storage suite's [Disruptive] specs need of each worker node of a multi-node cluster
# (tests/harness/k8s/lib/nodes.sh); sourced by tests/harness/k8s/cluster.
#
# The suite (k8s.io/kubernetes test/e2e/storage/utils, framework/ssh) SSHes to the node's
# InternalIP on port 22 as $KUBE_SSH_USER with the key in $KUBE_SSH_KEY_PATH and runs
# `systemctl stop|start kubelet`, `systemctl show kubelet --property ActiveState --value`
# (must print `active`), `mount | grep`, `cat /proc/self/mountinfo`, `ls` and `find` under
# /var/lib/kubelet; it prefixes `sudo` unless `sudo --version` answers "command not found"
# (root's login shell is bash, and this machine has no sudo). So each node gets:
#   - an sshd (Debian's OpenSSH, `cluster install`) in the node's network, PID and mount
#     namespaces (lib/nodens.sh), on the node's IP port 22, root by key only, with the
#     cluster's key ($state/ssh/id_ed25519, made by `up`, gone with `down`): a session sees
#     the node's /var/lib/kubelet, mounts and processes, as on a real node;
#   - a `systemctl` of its own: in the node's mount namespace lib/node-systemctl is
#     bind-mounted on /usr/bin/systemctl (the host's systemd tool, which has no systemd to talk
#     to here). It cannot stop or start the kubelet itself: the node's daemons are started and
#     stopped from the host (their pid files hold host pids, lib/nodens.sh), so it hands the
#     request through a FIFO ($nstate/systemd/req) to the node's agent, a host process
#     (`cluster node-agent node-I`) that runs the same stop_daemon and node_kubelet_start as
#     `up` and `down`, and answers through a FIFO of the caller's.

# The cluster's SSH client key and each node's sshd config and host key (after node_ctx).
ssh_keys_make() {
    mkdir -p "$state/ssh"
    [[ -f $state/ssh/id_ed25519 ]] ||
        ssh-keygen -q -t ed25519 -N '' -C "cinder-csi-k8s e2e" -f "$state/ssh/id_ed25519"
    cp "$state/ssh/id_ed25519.pub" "$state/ssh/authorized_keys"
    chmod 600 "$state/ssh/authorized_keys"
}

node_ssh_config() {
    mkdir -p "$nstate/ssh"
    [[ -f $nstate/ssh/host_ed25519 ]] || ssh-keygen -q -t ed25519 -N '' -C "$node_name" -f "$nstate/ssh/host_ed25519"
    # StrictModes off: the state dir sits under /var/tmp (world-writable), which sshd's path
    # check refuses; the files themselves are root's, 0600.
    cat >"$nstate/ssh/sshd_config" <<EOF
ListenAddress $kubelet_ip:22
HostKey $nstate/ssh/host_ed25519
PidFile none
AuthorizedKeysFile $state/ssh/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
X11Forwarding no
AllowTcpForwarding no
PrintMotd no
EOF
}

# node_ssh_start: the node's systemctl, its agent and its sshd (node_ctx's node, whose
# namespaces run). sshd wants its privilege separation dir, /run/sshd, which no sshd of this
# host made: `down` removes it again.
node_ssh_start() {
    if [[ ! -d /run/sshd ]]; then
        mkdir -m 0755 /run/sshd
        echo "dir /run/sshd" >>"$state/mounts.made"
    fi
    mkdir -p "$nstate/systemd"
    [[ -p $nstate/systemd/req ]] || mkfifo -m 0600 "$nstate/systemd/req"
    alive "node-agent$nsfx" || start "node-agent$nsfx" "$here/cluster" node-agent "$node_name"
    printf '#!/bin/bash\nexec %q %q "$@"\n' "$here/lib/node-systemctl" "$nstate/systemd" >"$nstate/systemd/systemctl"
    chmod 755 "$nstate/systemd/systemctl"
    nodens_exec mount --bind "$nstate/systemd/systemctl" /usr/bin/systemctl
    start_in_nodens "sshd$nsfx" /usr/sbin/sshd -D -e -f "$nstate/ssh/sshd_config"
    wait_for "$node_name: sshd on $kubelet_ip:22" 30 node_ssh root@"$kubelet_ip" true
}

# node_ssh USER@HOST CMD...: the suite's way in (a key, no host key check, no agent).
node_ssh() {
    ssh -i "$state/ssh/id_ed25519" -o BatchMode=yes -o StrictHostKeyChecking=no \
        -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o ConnectTimeout=5 "$@"
}

# `node-agent node-I` (a host daemon, started by node_ssh_start): serves the node's systemctl.
# A request is one line "ID VERB UNIT [ARGS]" on $nstate/systemd/req; the answer goes to the
# FIFO $nstate/systemd/reply.ID that the caller made: what the verb prints, then "rc=N".
# (Requests run one at a time, as systemd queues jobs of one unit.)
node_agent() {
    local i id verb unit args reply rc
    i=$(node_index "$1")
    node_ctx "$i"
    exec 3<>"$nstate/systemd/req" # read-write: the FIFO never reads EOF between callers
    set +e
    while read -r id verb unit args <&3; do
        reply=$nstate/systemd/reply.$id
        [[ $id =~ ^[0-9]+$ && -p $reply ]] || continue
        # Its stdout is the answer; its log lines (stderr) stay in this agent's log. Opened
        # read-write: the caller holds its end open from before its request, and a caller
        # gone meanwhile must not leave the agent waiting for a reader.
        {
            node_unit "$verb" "$unit" "$args"
            rc=$?
            echo "rc=$rc"
        } 1<>"$reply"
    done
}

# node_unit VERB UNIT ARGS: what systemctl VERB UNIT does on a systemd node, for the kubelet.
node_unit() {
    local verb=$1 unit=${2%.service} args=$3
    if [[ $unit != kubelet ]]; then
        echo "Unit $unit.service could not be found."
        return 5
    fi
    local state_=inactive
    alive "kubelet$nsfx" && state_=active
    case $verb in
        stop) stop_daemon "kubelet$nsfx" && log "$node_name: kubelet stopped (systemctl stop)" ;;
        start)
            [[ $state_ == active ]] || { node_kubelet_start && log "$node_name: kubelet started (systemctl start)"; }
            ;;
        restart)
            stop_daemon "kubelet$nsfx"
            node_kubelet_start && log "$node_name: kubelet restarted (systemctl restart)"
            ;;
        is-active)
            echo "$state_"
            [[ $state_ == active ]] || return 3
            ;;
        show)
            # show [--property P[,P]] [--value]: ActiveState, SubState.
            local props=ActiveState,SubState value=0 p v a
            read -ra a <<<"$args"
            while ((${#a[@]})); do
                case ${a[0]} in
                    --property | -p) props=${a[1]:-}; a=("${a[@]:2}") ;;
                    --property=*) props=${a[0]#*=}; a=("${a[@]:1}") ;;
                    --value) value=1; a=("${a[@]:1}") ;;
                    *) a=("${a[@]:1}") ;;
                esac
            done
            for p in ${props//,/ }; do
                case $p in
                    ActiveState) v=$state_ ;;
                    SubState) v=$([[ $state_ == active ]] && echo running || echo dead) ;;
                    *) v="" ;;
                esac
                if ((value)); then echo "$v"; else echo "$p=$v"; fi
            done
            ;;
        *)
            echo "systemctl on $node_name: '$verb' is not supported here (start, stop, restart, is-active, show)"
            return 1
            ;;
    esac
}

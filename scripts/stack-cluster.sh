# shellcheck shell=bash
# The 3-broker profile of scripts/stack (start-cluster, stop-cluster,
# status-cluster, cluster-kill N, cluster-stop N, cluster-start N; see its
# header): sourced by it, it defines functions only and uses scripts/stack's
# globals and helpers.

# --- the 3-broker profile --------------------------------------------------
#
# Three Kafka nodes, each broker and controller in one JVM (a 3-voter KRaft
# quorum: any one node may be down), replication factor 3 and
# min.insync.replicas 2 for every topic, the group offsets included: a
# producer with acks=all and a commit both go on with one node down. Its own
# ports and state dir, so that it runs beside the plain stack (whose store
# its users share). Node N listens on CLU_PORT + 2(N-1) (its controller on
# the next port) and keeps its state in $CLU/kafka-N.

CLU="$AGG_CACHE_DIR/stack-cluster"
CLU_PORT="${AGG_CLUSTER_KAFKA_PORT:-19392}"
CLU_NODES=3
# The next-generation protocol's group timing is the broker's: the session
# (a member that sends no heartbeat for it is removed, its partitions move)
# and the heartbeat interval. docs/OPERATIONS.md ("Kafka down") says how the
# session was chosen; the minimums are lowered so that it may be below
# Kafka's 45 s.
CLU_SESSION_MS="${AGG_CLUSTER_SESSION_TIMEOUT_MS:-10000}"
CLU_HEARTBEAT_MS="${AGG_CLUSTER_HEARTBEAT_MS:-5000}"

clu_port() { echo $((CLU_PORT + 2 * ($1 - 1))); }
clu_controller_port() { echo $((CLU_PORT + 2 * ($1 - 1) + 1)); }
clu_node() {
    [[ "${1:-}" =~ ^[1-3]$ ]] || agg_die "a node of the 3-broker profile: 1, 2 or 3 (not '${1:-}')"
    K="$CLU/kafka-$1"
}
clu_brokers() {
    local n out=""
    for n in $(seq 1 $CLU_NODES); do out="${out:+$out,}$HOST:$(clu_port "$n")"; done
    echo "$out"
}

clu_write_config() {
    local n="$1" voters="" i
    for i in $(seq 1 $CLU_NODES); do voters="${voters:+$voters,}$i@$HOST:$(clu_controller_port "$i")"; done
    mkdir -p "$K/data" "$K/logs"
    cat >"$K/server.properties" <<EOF
# Written by scripts/stack start-cluster; rewritten on every start.
process.roles=broker,controller
node.id=$n
controller.quorum.voters=$voters
listeners=PLAINTEXT://$HOST:$(clu_port "$n"),CONTROLLER://$HOST:$(clu_controller_port "$n")
advertised.listeners=PLAINTEXT://$HOST:$(clu_port "$n"),CONTROLLER://$HOST:$(clu_controller_port "$n")
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$K/data
auto.create.topics.enable=false
num.partitions=6
default.replication.factor=3
min.insync.replicas=2
offsets.topic.replication.factor=3
offsets.topic.num.partitions=6
transaction.state.log.replication.factor=3
transaction.state.log.min.isr=2
share.coordinator.state.topic.replication.factor=3
share.coordinator.state.topic.min.isr=2
group.initial.rebalance.delay.ms=0
group.consumer.session.timeout.ms=$CLU_SESSION_MS
group.consumer.min.session.timeout.ms=6000
group.consumer.heartbeat.interval.ms=$CLU_HEARTBEAT_MS
group.consumer.min.heartbeat.interval.ms=1000
EOF
    write_kafka_log4j "scripts/stack start-cluster"
}

# Node $1 on the data it has (formatted by start-cluster).
clu_launch() {
    clu_node "$1"
    set_kafka_java
    kafka_java[2]=-Xmx384m # three JVMs beside the plain stack's
    launch "$K/kafka.pid" "$K/kafka.out" "${kafka_java[@]}" kafka.Kafka "$K/server.properties"
}

# Waits until every node answers and the metadata lists all of them.
clu_wait() {
    local deadline="$1" n err
    for n in $(seq 1 $CLU_NODES); do
        clu_node "$n"
        our_pid "$K/kafka.pid" "$(kafka_marker)" >/dev/null || continue
        wait_ready "kafka-$n" kafka "$HOST:$(clu_port "$n")" "$K/kafka.pid" "$(kafka_marker)" \
            "$K/logs/server.log" "$deadline" || return 1
    done
    local first
    for n in $(seq $CLU_NODES -1 1); do
        our_pid "$CLU/kafka-$n/kafka.pid" "$CLU/kafka-$n/server.properties" >/dev/null && first="$n"
    done
    [ -n "${first:-}" ] || { agg_log "stack-cluster: no node runs"; return 1; }
    until err="$("$PROBE" kafka-cluster "$HOST:$(clu_port "$first")" "$(clu_running_count)" 2>&1)"; do
        if [ "$(date +%s)" -ge "$deadline" ]; then
            agg_log "stack-cluster: the nodes did not form the cluster within ${TIMEOUT}s ($err)"
            return 1
        fi
        sleep 0.25
    done
}

clu_running_count() {
    local n c=0
    for n in $(seq 1 $CLU_NODES); do
        our_pid "$CLU/kafka-$n/kafka.pid" "$CLU/kafka-$n/server.properties" >/dev/null && c=$((c + 1))
    done
    echo "$c"
}

cmd_start_cluster() {
    local t0 n p cluster_id
    t0="$(agg_now)"
    agg_install_kafka
    check_java
    if [ "$(clu_running_count)" -gt 0 ]; then
        agg_log "stack-cluster: already running; restarting it fresh"
        cmd_stop_cluster
    fi
    for n in $(seq 1 $CLU_NODES); do
        for p in "$(clu_port "$n")" "$(clu_controller_port "$n")"; do
            port_in_use "$p" && agg_die "port $HOST:$p is in use by a process this script did not start"
        done
    done
    rm -rf "$CLU"
    cluster_id="$(python3 -c 'import base64, uuid
while True:
    s = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    if not s.startswith("-"): print(s); break')"
    for n in $(seq 1 $CLU_NODES); do
        clu_node "$n"
        clu_write_config "$n"
        set_kafka_java
        # Static voters (controller.quorum.voters): every node formatted
        # with the same cluster id, none standalone.
        if ! "${kafka_java[@]}" kafka.tools.StorageTool format -t "$cluster_id" -c "$K/server.properties" \
                >"$K/format.log" 2>&1; then
            cat "$K/format.log" >&2
            agg_die "stack-cluster: formatting node $n failed (log: $K/format.log)"
        fi
    done
    for n in $(seq 1 $CLU_NODES); do clu_launch "$n"; done
    if ! clu_wait $(( $(date +%s) + TIMEOUT )); then
        cmd_stop_cluster
        agg_die "the 3-broker stack did not start (see the logs above)"
    fi
    agg_log "stack-cluster: kafka $(agg_kafka_version), 3 brokers on $(clu_brokers) (state $CLU)"
    agg_log "stack-cluster: ready in $(agg_elapsed "$t0")s"
}

cmd_stop_cluster() {
    local n
    for n in $(seq 1 $CLU_NODES); do
        clu_node "$n"
        stop_one "kafka-$n" "$K/kafka.pid" "$(kafka_marker)"
    done
}

# One node: stopped (TERM: a controlled shutdown that moves its leaders
# first), killed (KILL: its leaders and the coordinators it holds fail over
# once the controller fences it), or started again on its data.
cmd_cluster_stop() { clu_node "${1:-}"; stop_one "kafka-$1" "$K/kafka.pid" "$(kafka_marker)"; }
cmd_cluster_kill() { clu_node "${1:-}"; stop_one "kafka-$1" "$K/kafka.pid" "$(kafka_marker)" KILL; }
cmd_cluster_start() {
    clu_node "${1:-}"
    if our_pid "$K/kafka.pid" "$(kafka_marker)" >/dev/null; then
        agg_log "kafka-$1: already running"
        return 0
    fi
    [ -f "$K/data/meta.properties" ] || agg_die "kafka-$1: no data in $K (scripts/stack start-cluster makes the cluster)"
    port_in_use "$(clu_port "$1")" && agg_die "port $HOST:$(clu_port "$1") is in use by a process this script did not start"
    agg_install_kafka
    clu_launch "$1"
    clu_wait $(( $(date +%s) + TIMEOUT )) || agg_die "kafka-$1 did not rejoin the cluster"
    agg_log "kafka-$1: running on $HOST:$(clu_port "$1") (pid $(cat "$K/kafka.pid"))"
}

cmd_status_cluster() {
    local n rc=0
    for n in $(seq 1 $CLU_NODES); do
        clu_node "$n"
        status_one "kafka-$n" "$K/kafka.pid" "$(kafka_marker)" kafka "$HOST:$(clu_port "$n")" "$K/logs/server.log" ||
            rc=3
    done
    return "$rc"
}

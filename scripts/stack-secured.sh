# shellcheck shell=bash
# The secured profile of scripts/stack (start-secured, stop-secured,
# status-secured; see its header): sourced by it, it defines functions only
# and uses scripts/stack's globals and helpers.

# --- the secured profile ---------------------------------------------------
#
# The same services, production-like (see the header): its own state dir,
# ports and processes, so that it runs beside the plain stack. The
# functions above serve it once sec_enter has pointed their globals here.

sec_enter() {
    STACK="$SEC"
    K="$SEC/kafka"
    F="$SEC/ferretdb"
    P="$SEC/postgres"
    PG_PORT="$SEC_PG_PORT"
    PG_INITDB_AUTH=(--auth=scram-sha-256)
}

sec_secret() { od -An -N16 -tx1 /dev/urandom | tr -d ' \n'; }

# A CA and one server certificate (127.0.0.1 and localhost) that both
# servers present; the broker's as a PKCS#12 keystore too.
sec_write_tls() {
    local t="$SEC/tls"
    mkdir -p "$t"
    (
        set -e
        cd "$t"
        openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 30 \
            -subj "/CN=aggregator local test CA" \
            -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
        openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj "/CN=localhost"
        printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n' >server.ext
        openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 30 \
            -extfile server.ext
        openssl pkcs12 -export -in server.pem -inkey server.key -certfile ca.pem -name broker \
            -out broker.p12 -passout "pass:$(cat "$SEC/secrets/keystore.password")"
        chmod 600 ca.key server.key broker.p12
    ) >"$SEC/tls.log" 2>&1 || { cat "$SEC/tls.log" >&2; agg_die "secured: making the certificates failed"; }
}

sec_write_kafka_config() {
    local admin_pw worker_pw ks_pw plain scram
    admin_pw="$(cat "$SEC/secrets/kafka-admin.password")"
    worker_pw="$(cat "$SEC/secrets/kafka-password")"
    ks_pw="$(cat "$SEC/secrets/keystore.password")"
    plain="org.apache.kafka.common.security.plain.PlainLoginModule required"
    scram="org.apache.kafka.common.security.scram.ScramLoginModule required"
    mkdir -p "$K/data" "$K/logs"
    cat >"$K/server.properties" <<EOF
# Written by scripts/stack start-secured; rewritten on every start.
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=$HOST:$SEC_CONTROLLER_PORT
listeners=SASL_SSL://$HOST:$SEC_KAFKA_PORT,CONTROLLER://$HOST:$SEC_CONTROLLER_PORT
advertised.listeners=SASL_SSL://$HOST:$SEC_KAFKA_PORT,CONTROLLER://$HOST:$SEC_CONTROLLER_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=SASL_SSL
listener.security.protocol.map=CONTROLLER:SASL_PLAINTEXT,SASL_SSL:SASL_SSL
# Clients: SCRAM-SHA-512 (users made when formatting) and PLAIN (users in
# the JAAS line). The broker itself is admin, over PLAIN.
listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-512,PLAIN
listener.name.sasl_ssl.plain.sasl.jaas.config=$plain username="admin" password="$admin_pw" user_admin="$admin_pw" user_aggregator="$worker_pw";
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=$scram username="admin" password="$admin_pw";
sasl.mechanism.inter.broker.protocol=PLAIN
listener.name.controller.sasl.enabled.mechanisms=PLAIN
listener.name.controller.plain.sasl.jaas.config=$plain username="admin" password="$admin_pw" user_admin="$admin_pw";
sasl.mechanism.controller.protocol=PLAIN
ssl.keystore.type=PKCS12
ssl.keystore.location=$SEC/tls/broker.p12
ssl.keystore.password=$ks_pw
ssl.truststore.type=PEM
ssl.truststore.location=$SEC/tls/ca.pem
# ACLs only: admin is the one super user, everyone else gets what is granted.
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:admin
allow.everyone.if.no.acl.found=false
log.dirs=$K/data
auto.create.topics.enable=false
num.partitions=6
default.replication.factor=1
min.insync.replicas=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=6
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
EOF
    chmod 600 "$K/server.properties"
    write_kafka_log4j "scripts/stack start-secured"
    # The client settings of the tools and of kafka_tool, as admin.
    cat >"$SEC/admin.properties" <<EOF
security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=$scram username="admin" password="$admin_pw";
ssl.truststore.type=PEM
ssl.truststore.location=$SEC/tls/ca.pem
EOF
    cat >"$SEC/admin-rdkafka.properties" <<EOF
security.protocol=SASL_SSL
sasl.mechanisms=SCRAM-SHA-512
sasl.username=admin
sasl.password=$admin_pw
ssl.ca.location=$SEC/tls/ca.pem
EOF
    chmod 600 "$SEC/admin.properties" "$SEC/admin-rdkafka.properties"
}

# bin/kafka-acls.sh and its siblings: Kafka's own tool classes on the
# broker's and the tools' jars, warnings and errors on stderr.
sec_write_tools() {
    mkdir -p "$SEC/bin"
    cat >"$SEC/bin/tools-log4j2.properties" <<EOF
status = error
appender.err.type = Console
appender.err.name = STDERR
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.err.ref = STDERR
EOF
    local name class
    for name in kafka-acls.sh:org.apache.kafka.tools.AclCommand kafka-topics.sh:org.apache.kafka.tools.TopicCommand \
            kafka-configs.sh:kafka.admin.ConfigCommand \
            kafka-consumer-groups.sh:org.apache.kafka.tools.consumer.group.ConsumerGroupCommand; do
        class="${name#*:}" name="${name%%:*}"
        cat >"$SEC/bin/$name" <<EOF
#!/bin/sh
# Written by scripts/stack start-secured: Kafka $(agg_kafka_version)'s $name.
exec "$JAVA" -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true \\
    -Dlog4j2.configurationFile="$SEC/bin/tools-log4j2.properties" \\
    -cp "$(agg_kafka_libs)/*:$(agg_kafka_tools_libs)/*" $class "\$@"
EOF
        chmod +x "$SEC/bin/$name"
    done
}

sec_start_kafka() {
    rm -rf "$K"
    sec_write_kafka_config
    set_kafka_java
    local cluster_id
    cluster_id="$(python3 -c 'import base64, uuid
while True:
    s = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    if not s.startswith("-"): print(s); break')"
    # SCRAM credentials live in the cluster's metadata: written when
    # formatting, before the first start.
    if ! "${kafka_java[@]}" kafka.tools.StorageTool format --standalone -t "$cluster_id" \
            -c "$K/server.properties" \
            --add-scram "SCRAM-SHA-512=[name=admin,password=$(cat "$SEC/secrets/kafka-admin.password")]" \
            --add-scram "SCRAM-SHA-512=[name=aggregator,password=$(cat "$SEC/secrets/kafka-password")]" \
            >"$K/format.log" 2>&1; then
        cat "$K/format.log" >&2
        agg_die "secured kafka: formatting the log directory failed (log: $K/format.log)"
    fi
    launch "$K/kafka.pid" "$K/kafka.out" "${kafka_java[@]}" kafka.Kafka "$K/server.properties"
}

# The store's role: it logs in through FerretDB (which passes a client's
# credentials on to PostgreSQL) and may create the schemas and tables
# FerretDB keeps a database in: CONNECT and CREATE on FerretDB's database,
# nothing else.
sec_setup_store_role() {
    local psql=("$(agg_pg_bindir)/psql" -X -q -v ON_ERROR_STOP=1 -h "$HOST" -p "$PG_PORT" -U postgres -d ferretdb)
    PGPASSWORD="$PG_PASSWORD" "${psql[@]}" -v pw="$(cat "$SEC/secrets/store.password")" <<'SQL' >"$SEC/role.log" 2>&1
CREATE ROLE aggregator LOGIN PASSWORD :'pw';
GRANT CONNECT, CREATE ON DATABASE ferretdb TO aggregator;
SQL
}

sec_start_mongo() {
    mkdir -p "$F/state"
    launch "$F/ferretdb.pid" "$F/ferretdb.log" "$(agg_ferretdb_bin)" \
        --handler=postgresql --postgresql-url="postgres://$HOST:$PG_PORT/ferretdb" \
        --state-dir="$F/state" \
        --listen-addr= \
        --listen-tls="$HOST:$SEC_MONGO_PORT" \
        --listen-tls-cert-file="$SEC/tls/server.pem" \
        --listen-tls-key-file="$SEC/tls/server.key" \
        --debug-addr= \
        --telemetry=disable \
        --log-level=warn \
        --log-format=text
}

sec_running() {
    our_pid "$K/kafka.pid" "$(kafka_marker)" >/dev/null ||
        our_pid "$F/ferretdb.pid" "$(mongo_marker)" >/dev/null ||
        our_pid "$STACK/postgres.pid" "$(pg_marker)" >/dev/null
}

cmd_start_secured() {
    local t0
    t0="$(agg_now)"
    agg_install_kafka
    agg_install_kafka_tools
    agg_install_ferretdb
    check_java
    command -v openssl >/dev/null || agg_die "openssl not found (the secured profile makes its certificates with it)"
    sec_enter
    if sec_running; then
        agg_log "stack-secured: already running; restarting it fresh"
        cmd_stop_secured
    fi
    local p
    for p in "$SEC_KAFKA_PORT" "$SEC_CONTROLLER_PORT" "$SEC_MONGO_PORT" "$SEC_PG_PORT"; do
        port_in_use "$p" && agg_die "port $HOST:$p is in use by a process this script did not start"
    done
    rm -rf "$SEC"
    mkdir -p "$SEC/secrets"
    chmod 700 "$SEC/secrets"
    local n
    for n in kafka-admin kafka keystore store-admin store; do
        sec_secret >"$SEC/secrets/$n.password"
    done
    mv "$SEC/secrets/kafka.password" "$SEC/secrets/kafka-password"
    PG_PASSWORD="$(cat "$SEC/secrets/store-admin.password")"
    printf 'mongodb://aggregator:%s@%s:%s/?tls=true&tlsCAFile=%s&authMechanism=PLAIN\n' \
        "$(cat "$SEC/secrets/store.password")" "$HOST" "$SEC_MONGO_PORT" "$SEC/tls/ca.pem" >"$SEC/secrets/mongodb-uri"
    chmod 600 "$SEC/secrets"/*
    sec_write_tls
    sec_write_tools
    echo postgresql >"$SEC/backend"
    sec_start_kafka
    local deadline=$(( $(date +%s) + TIMEOUT ))
    local ok=1
    ready() { wait_ready "$@" && agg_log "stack-secured: $1 ready after $(agg_elapsed "$t0")s"; }
    start_postgres
    ready postgresql pg "$HOST:$PG_PORT" "$STACK/postgres.pid" "$(pg_marker)" "$(pg_log)" "$deadline" &&
        PGPASSWORD="$PG_PASSWORD" setup_postgres && sec_setup_store_role || ok=0
    if [ "$ok" = 1 ]; then
        sec_start_mongo
        ready ferretdb mongo-tls "$HOST:$SEC_MONGO_PORT" "$F/ferretdb.pid" "$(mongo_marker)" "$F/ferretdb.log" \
            "$deadline" &&
        ready kafka kafka-secured "$HOST:$SEC_KAFKA_PORT" "$K/kafka.pid" "$(kafka_marker)" "$K/logs/server.log" \
            "$deadline" || ok=0
    fi
    if [ "$ok" = 0 ]; then
        cmd_stop_secured
        agg_die "the secured stack did not start (see the logs above)"
    fi
    agg_log "stack-secured: kafka SASL_SSL on $HOST:$SEC_KAFKA_PORT (log $K/logs/server.log)"
    agg_log "stack-secured: ferretdb TLS on $HOST:$SEC_MONGO_PORT (postgresql on $HOST:$PG_PORT, log $F/ferretdb.log)"
    agg_log "stack-secured: CA $SEC/tls/ca.pem, secrets in $SEC/secrets, tools in $SEC/bin"
    agg_log "stack-secured: ready in $(agg_elapsed "$t0")s"
}

cmd_stop_secured() {
    sec_enter
    stop_one ferretdb-secured "$F/ferretdb.pid" "$(mongo_marker)"
    stop_postgres
    stop_one kafka-secured "$K/kafka.pid" "$(kafka_marker)"
}

cmd_status_secured() {
    sec_enter
    local rc=0
    status_one kafka-secured "$K/kafka.pid" "$(kafka_marker)" kafka-secured "$HOST:$SEC_KAFKA_PORT" \
        "$K/logs/server.log" || rc=3
    status_one postgresql-secured "$STACK/postgres.pid" "$(pg_marker)" pg "$HOST:$PG_PORT" "$(pg_log)" || rc=3
    status_one ferretdb-secured "$F/ferretdb.pid" "$(mongo_marker)" mongo-tls "$HOST:$SEC_MONGO_PORT" \
        "$F/ferretdb.log" || rc=3
    return "$rc"
}

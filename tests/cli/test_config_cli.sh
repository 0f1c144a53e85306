#!/usr/bin/env bash
# aggregator config check|show|describe: exit status, one-line errors naming
# FILE:LINE, redaction, precedence, and the shipped examples.
# Env: AGGREGATOR (the binary), AGG_SOURCE_DIR.
set -u
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
SRC="${AGG_SOURCE_DIR:?AGG_SOURCE_DIR must name the source tree}"

stderr_is() { [ "$(cat "$T/err")" = "$1" ] || fail "stderr is '$(cat "$T/err")', expected '$1'"; }
stdout_has() { grep -qxF -- "$1" "$T/out" || fail "stdout lacks line '$1'"; }
stdout_lacks() { ! grep -qF -- "$1" "$T/out" || fail "stdout contains '$1'"; }
one_line_stderr() { [ "$(wc -l <"$T/err")" = 1 ] || fail "stderr is not one line: $(cat "$T/err")"; }

# --- check: OK -----------------------------------------------------------
run 0 config check
stdout_has "configuration OK"
[ -s "$T/err" ] && fail "check wrote to stderr: $(cat "$T/err")"
run 0 config check -c "$SRC/config/development.ini"
stdout_has "configuration OK"
run 0 config check -c "$SRC/config/backfill.ini"

# production.ini needs its secret files; supply them through the environment.
printf 'mongodb://aggregator:pr0d-s3cret@mongo-0:27017/?tls=true&replicaSet=rs0\n' >"$T/mongodb-uri"
printf 'kafka-s3cret\n' >"$T/kafka-password"
run 2 config check -c "$SRC/config/production.ini"
grep -q "^aggregator: $SRC/config/production.ini:[0-9]*: kafka.rdkafka.sasl.password_file: cannot read /run/secrets/kafka-password: " "$T/err" \
  || grep -q "^aggregator: $SRC/config/production.ini:[0-9]*: store.uri_file: cannot read /run/secrets/mongodb-uri: " "$T/err" \
  || fail "production.ini without secrets: $(cat "$T/err")"
# Its CA file must exist too: a PEM bundle stands in for it.
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$T/ca.key" -out "$T/kafka-ca.pem" -days 1 -subj /CN=test-ca \
  >/dev/null 2>&1 || fail "openssl could not make a CA"
AGGREGATOR_STORE_URI_FILE="$T/mongodb-uri" AGGREGATOR_KAFKA_RDKAFKA_SASL_PASSWORD_FILE="$T/kafka-password" \
  AGGREGATOR_KAFKA_RDKAFKA_SSL_CA_LOCATION="$T/kafka-ca.pem" run 0 config show -c "$SRC/config/production.ini"
stdout_has "uri_file = $T/mongodb-uri"
stdout_has "rdkafka.sasl.password_file = $T/kafka-password"
stdout_has "write_concern = majority"
stdout_lacks "s3cret"
# What show prints loads back as the same configuration: show of it is the
# same text but for the line naming the file loaded.
cp "$T/out" "$T/shown.ini"
run 0 config show -c "$T/shown.ini"
diff <(grep -v '^# file: ' "$T/shown.ini") <(grep -v '^# file: ' "$T/out") >/dev/null \
  || fail "show of show output differs: $(diff "$T/shown.ini" "$T/out")"
# A secret pasted back as the *** that show prints is refused.
printf '[kafka]\nrdkafka.sasl.password = ***\n' >"$T/masked.ini"
run 2 config check -c "$T/masked.ini"
stderr_is "aggregator: $T/masked.ini:2: kafka.rdkafka.sasl.password: the value is ***, which is how config show masks a secret: give the secret itself"

# --- check: errors name FILE:LINE, exit 2 -----------------------------------
printf '# header\n[batch]\nmax_comands = 10\n' >"$T/typo.ini"
run 2 config check -c "$T/typo.ini"
stderr_is "aggregator: $T/typo.ini:3: batch.max_comands: unknown key (did you mean batch.max_commands?)"
[ -s "$T/out" ] && fail "failed check wrote to stdout"

# Every error, one line each, in file order; exit 2.
printf '[kafka]\nbogus = 1\n[batch]\nlinger_ms = -5\n[retry]\nbackoff_ms = abc\n' >"$T/three.ini"
run 2 config check -c "$T/three.ini" --set log.level=loud
stderr_is "aggregator: $T/three.ini:2: kafka.bogus: unknown key
aggregator: $T/three.ini:4: batch.linger_ms: '-5' is out of range 0..60000
aggregator: $T/three.ini:6: retry.backoff_ms: 'abc' is not an integer
aggregator: --set log.level: 'loud' is not one of error, warn, info, debug"

# Files that values name, settings that cannot work together, and what
# librdkafka refuses when it builds the clients: each fails check (exit 2)
# instead of the worker at start.
printf '[kafka]\nrdkafka.security.protocol = SASL_SSL\nrdkafka.sasl.mechanism = PLAIN\nrdkafka.ssl.ca.location = /nonexistent/ca.pem\n[store]\nuri = mongodb://h/?tls=true&tlsCAFile=/nonexistent/mongo-ca.pem\n' >"$T/files.ini"
run 2 config check -c "$T/files.ini"
stderr_is "aggregator: $T/files.ini:4: kafka.rdkafka.ssl.ca.location: cannot read /nonexistent/ca.pem: No such file or directory
aggregator: $T/files.ini:6: store.uri: tlsCAFile: cannot read /nonexistent/mongo-ca.pem: No such file or directory
aggregator: $T/files.ini:2: kafka.rdkafka.security.protocol: SASL_SSL with sasl.mechanism PLAIN needs kafka.rdkafka.sasl.username and kafka.rdkafka.sasl.password[_file]"
# run, replay and verify load it the same way: exit 2 at start with the same lines.
cp "$T/err" "$T/check.err"
for cmd in run "replay --output $T/never.jsonl" verify; do
  # shellcheck disable=SC2086
  run 2 $cmd -c "$T/files.ini"
  cmp -s "$T/err" "$T/check.err" || fail "$cmd: stderr differs from config check's: $(cat "$T/err")"
done
[ -e "$T/never.jsonl" ] && fail "replay wrote its output"
printf 'not a key\n' >"$T/bad.pem"
run 2 config check --set kafka.rdkafka.security.protocol=SSL --set "kafka.rdkafka.ssl.certificate.location=$T/bad.pem" --set "kafka.rdkafka.ssl.key.location=$T/bad.pem"
grep -q "^aggregator: kafka.rdkafka: the \`run\` consumer: librdkafka: ssl\.[a-z.]* failed: " "$T/err" \
  || fail "malformed PEM: $(cat "$T/err")"
one_line_stderr
run 2 config check --set kafka.rdkafka.security.protocol=SASL_PLAINTEXT --set kafka.rdkafka.sasl.mechanism=GSSAPI
grep -q "^aggregator: kafka.rdkafka: the \`run\` consumer: librdkafka: .*sasl.kerberos" "$T/err" \
  || fail "GSSAPI without a keytab: $(cat "$T/err")"

# A change topic is neither a command topic nor the dead-letter topic (the
# worker would read its own events as commands, or mix them with rejects):
# exit 2, naming the key where it was set; run refuses it the same way.
printf '[kafka]\ntopics = a,b\ndlq_topic = d\n[changes]\ntopic = b\n' >"$T/changes.ini"
run 2 config check -c "$T/changes.ini"
stderr_is "aggregator: $T/changes.ini:5: changes.topic: 'b' is both a command topic and the change topic"
cp "$T/err" "$T/check.err"
run 2 run -c "$T/changes.ini"
cmp -s "$T/err" "$T/check.err" || fail "run: stderr differs from config check's: $(cat "$T/err")"
printf '[kafka]\ntopics = a\ndlq_topic = d\n\n[changes]\ninclude_document = false\ntopic = d\n' >"$T/changes-dlq.ini"
run 2 config check -c "$T/changes-dlq.ini"
stderr_is "aggregator: $T/changes-dlq.ini:7: changes.topic: 'd' is both the dead-letter topic and the change topic"
# The key set last (by precedence) is the one named.
run 2 config check -c "$T/changes-dlq.ini" --set kafka.dlq_topic=e --set kafka.topics=a,d
stderr_is "aggregator: --set kafka.topics: 'd' is both a command topic and the change topic"
AGGREGATOR_CHANGES_TOPIC=assignment-commands run 2 config check
stderr_is "aggregator: environment AGGREGATOR_CHANGES_TOPIC: changes.topic: 'assignment-commands' is both a command topic and the change topic"
run 0 config check -c "$T/changes-dlq.ini" --set changes.topic=announced
stdout_has "configuration OK"

printf '[bacth]\n' >"$T/section.ini"
run 2 config check -c "$T/section.ini"
stderr_is "aggregator: $T/section.ini:1: [bacth]: unknown section (did you mean [batch]?)"

printf '[batch]\n\n\nlinger_ms = 60001\n' >"$T/range.ini"
run 2 config show -c "$T/range.ini"
stderr_is "aggregator: $T/range.ini:4: batch.linger_ms: '60001' is out of range 0..60000"
[ -s "$T/out" ] && fail "failed show wrote to stdout"

printf '[kafka]\nrdkafka.socket.timeout.ms = soon\n' >"$T/rk.ini"
run 2 config check -c "$T/rk.ini"
stderr_is "aggregator: $T/rk.ini:2: kafka.rdkafka.socket.timeout.ms: librdkafka: Invalid value for configuration property \"socket.timeout.ms\""

printf '[store]\nuri = mongodb://u:hunter2@h:99999/\n' >"$T/uri.ini"
run 2 config check -c "$T/uri.ini"
one_line_stderr
grep -q "hunter2" "$T/err" && fail "a secret leaked into the error: $(cat "$T/err")"
grep -q "^aggregator: $T/uri.ini:2: store.uri: " "$T/err" || fail "uri error: $(cat "$T/err")"

# URI options: one libmongoc does not know is an error (it would drop it);
# a bad value of one it knows is shown as written (only secrets are masked).
printf '[store]\nuri = mongodb://u:hunter2@h/?replicaSett=rs0\n' >"$T/uriopt.ini"
run 2 config check -c "$T/uriopt.ini"
stderr_is "aggregator: $T/uriopt.ini:2: store.uri: unknown MongoDB URI option 'replicaSett' (did you mean replicaset? names are case-insensitive)"
run 2 config check --set 'store.uri=mongodb://u:hunter2@h/?tls=maybe'
stderr_is "aggregator: --set store.uri: the value is not a MongoDB URI: Unsupported value for \"tls\": \"maybe\""

run 2 config check -c "$T/missing.ini"
stderr_is "aggregator: $T/missing.ini: cannot open: No such file or directory"

run 2 config check --set batch.linger_ms=soon
stderr_is "aggregator: --set batch.linger_ms: 'soon' is not an integer"

AGGREGATOR_LOG_LEVEL=loud run 2 config check
stderr_is "aggregator: environment AGGREGATOR_LOG_LEVEL: log.level: 'loud' is not one of error, warn, info, debug"

# --- an AGGREGATOR_ variable that names no key: one warning line, no error ---
AGGREGATOR_BACTH_MAX_COMMANDS=5 run 0 config check
stdout_has "configuration OK"
stderr_is "aggregator: warning: environment AGGREGATOR_BACTH_MAX_COMMANDS names no configuration key (did you mean AGGREGATOR_BATCH_MAX_COMMANDS?); ignored"
AGGREGATOR_MY_WRAPPER_OPTION=1 run 0 config show
stderr_is "aggregator: warning: environment AGGREGATOR_MY_WRAPPER_OPTION names no configuration key; ignored"
stdout_has "max_commands = 20000"
# Kubernetes' variables for a Service named "aggregator" are not ours to judge.
AGGREGATOR_SERVICE_HOST=10.0.0.1 AGGREGATOR_SERVICE_PORT=9464 AGGREGATOR_PORT=tcp://10.0.0.1:9464 \
  AGGREGATOR_PORT_9464_TCP_ADDR=10.0.0.1 run 0 config check
[ -s "$T/err" ] && fail "Kubernetes service variables warned: $(cat "$T/err")"

# --- show: precedence defaults < file < environment < --set ---------------
printf '[batch]\nlinger_ms = 10\nmax_commands = 11\nmax_aggregates = 12\n' >"$T/p.ini"
AGGREGATOR_BATCH_LINGER_MS=20 AGGREGATOR_BATCH_MAX_COMMANDS=21 \
  run 0 config show -c "$T/p.ini" --set batch.linger_ms=30
stdout_has "linger_ms = 30"
stdout_has "max_commands = 21"
stdout_has "max_aggregates = 12"
stdout_has "max_pending_bytes = 64MiB"
stdout_has "# file: $T/p.ini"

# --- show --origin: where each value came from ------------------------------
# stdout_pair COMMENT LINE: LINE is in stdout right below COMMENT.
stdout_pair() { grep -qxF -- "$2" <(grep -A1 -xF -- "$1" "$T/out") || fail "stdout lacks '$1' above '$2'"; }
printf '[batch]\nlinger_ms = 10\nmax_commands = 11\nmax_aggregates = 12\n[store]\nuri_file = %s\n' "$T/mongodb-uri" >"$T/o.ini"
AGGREGATOR_BATCH_LINGER_MS=20 AGGREGATOR_BATCH_MAX_COMMANDS=21 \
  run 0 config show --origin -c "$T/o.ini" --set batch.linger_ms=30 --set kafka.rdkafka.sasl.password=kafka-s3cret
stdout_pair "# origin: --set" "linger_ms = 30"
stdout_pair "# origin: environment AGGREGATOR_BATCH_MAX_COMMANDS" "max_commands = 21"
stdout_pair "# origin: $T/o.ini:4" "max_aggregates = 12"
stdout_pair "# origin: default" "max_pending_bytes = 64MiB"
stdout_pair "# origin: $T/o.ini:6, read from $T/mongodb-uri" "uri_file = $T/mongodb-uri"
stdout_pair "# origin: --set" "rdkafka.sasl.password = ***"
stdout_lacks "s3cret"
[ "$(grep -c '^# origin: ' "$T/out")" = "$(grep -c '^[a-z_.]* =' "$T/out")" ] || fail "show --origin: not one origin per key"
# Without --origin, no origin comments.
run 0 config show -c "$T/o.ini"
stdout_lacks "# origin:"
# Only show takes --origin.
run 2 config check --origin
grep -qF "config check does not take --origin (see 'aggregator help config check')" "$T/err" || fail "check --origin: $(cat "$T/err")"

# show's output is itself a valid configuration file.
run 0 config show -c "$SRC/config/development.ini"
cp "$T/out" "$T/shown.ini"
run 0 config show -c "$T/shown.ini"
diff <(grep -v '^# file:' "$T/shown.ini") <(grep -v '^# file:' "$T/out") >/dev/null \
  || fail "show of its own output differs"

# --- describe ----------------------------------------------------------------
run 0 config describe
for key in kafka.brokers kafka.topics kafka.group kafka.dlq_topic store.uri store.database store.collection \
  store.write_concern batch.max_commands batch.max_aggregates batch.linger_ms batch.max_pending_bytes \
  retry.backoff_ms retry.backoff_max_ms cache.max_aggregates limits.max_command_bytes replay.threads metrics.listen \
  log.level log.format changes.topic changes.include_document kafka.rdkafka.; do
  grep -qF "  $key" "$T/out" || fail "describe lacks $key"
done
stdout_has "      integer, 0..60000; live; env AGGREGATOR_BATCH_LINGER_MS"

# --- replay.threads = 0: one per CPU this process may use ---------------------
# Pinned to one CPU (as a container's cpuset would), 0 resolves to 1, not to
# the machine's count; `config show` prints the number that replay uses.
taskset -c 0 "$BIN" config show >"$T/out" 2>"$T/err" || fail "config show under taskset: $(cat "$T/err")"
stdout_has "# threads = 0: 1 here, one per CPU this process may use"
"$BIN" config show --set replay.threads=3 >"$T/out" 2>"$T/err" || fail "config show: $(cat "$T/err")"
stdout_lacks "# threads = 0"

# --- help config check|show describe what they do ---------------------------
run 0 help config check
grep -qF -- "--connect" "$T/out" || fail "help config check lacks --connect"
grep -qF "naming every" "$T/out" || fail "help config check does not say it names every error"
run 0 help config show
grep -qF "password_file = /run/secrets/x" "$T/out" || fail "help config show lacks the _file form"
run 2 config show --connect
grep -qF "config show does not take --connect" "$T/err" || fail "show --connect: $(cat "$T/err")"

# --- usage errors are 2 as well (main.c) --------------------------------------
run 2 config frobnicate

finish "config CLI"

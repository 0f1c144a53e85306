#!/bin/bash
# Container HEALTHCHECK: exit 0 when GET /healthz on the worker's metrics
# endpoint answers 200, 1 otherwise.
#
# Written for bash's /dev/tcp so the runtime image needs neither curl nor
# wget (and their TLS stacks): bash is an Essential package, present in
# debian:bookworm-slim anyway. The address comes from
# AGGREGATOR_METRICS_LISTEN when set (0.0.0.0 and [::] mean "this host"),
# else the image's default 127.0.0.1:9464.
set -u
listen="${AGGREGATOR_METRICS_LISTEN:-127.0.0.1:9464}"
port="${listen##*:}"
host="${listen%:*}"
host="${host#[}"
host="${host%]}"
case "$host" in "" | 0.0.0.0) host=127.0.0.1 ;; ::) host=::1 ;; esac
[[ "$port" =~ ^[0-9]+$ ]] || { echo "healthcheck: bad metrics address '$listen'" >&2; exit 1; }

exec 3<>"/dev/tcp/$host/$port" || exit 1
printf 'GET /healthz HTTP/1.0\r\nHost: localhost\r\n\r\n' >&3
IFS= read -r -t 5 status <&3 || { echo "healthcheck: no answer from $host:$port" >&2; exit 1; }
status="${status%$'\r'}"
if [[ "$status" =~ ^HTTP/1\.[01]\ 200($|\ ) ]]; then exit 0; fi
# The body says why (e.g. "main loop stalled: no heartbeat for 42.0 s").
reason="$(timeout 2 cat <&3 | tail -n 1)"
echo "healthcheck: $status${reason:+: $reason}" >&2
exit 1

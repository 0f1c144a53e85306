#!/usr/bin/env bash
# aggregator verify without a running store (docs/CLI.md): it needs a configured store (a usage error
# otherwise), connects before it reads any command, gives up after store.connect_timeout_ms naming the
# store with its password masked, and when interrupted says so and exits 128 + the signal with no summary.
# The checks that need a store that answers are in tests/integration/test_verify_edges.py.
set -u
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export LC_ALL=C
: >"$T/empty.jsonl"

# 1. No store configured (no file, no AGGREGATOR_STORE_URI, no --set store.uri): exit 2 at once, one line.
start=$(date +%s)
run 2 verify --input "$T/empty.jsonl"
[ $(($(date +%s) - start)) -lt 10 ] || fail "no store: took $(($(date +%s) - start)) s"
[ "$(wc -l <"$T/err")" -eq 1 ] && grep -q '^aggregator: verify: no store is configured (store\.uri)' "$T/err" ||
  fail "no store: stderr: $(cat "$T/err")"
[ -s "$T/out" ] && fail "no store: wrote to stdout: $(cat "$T/out")"
run 2 verify --input "$T/empty.jsonl" --set store.database=x # other store keys are not a store
# A config file without store.uri does not name one either; one with it does (it then waits for the store).
printf '[store]\ndatabase = x\n' >"$T/nouri.ini"
run 2 verify -c "$T/nouri.ini" --input "$T/empty.jsonl"

# 2. A store where nothing listens: exit 1 after store.connect_timeout_ms, one error line naming the store,
#    the password masked; nothing read first (a missing --input would be a different error).
port=$( (python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])') )
uri="mongodb://auditor:s3cr3t-pw@127.0.0.1:$port/?serverSelectionTimeoutMS=200"
for how in set env file; do
  args=(verify --input "$T/does-not-exist.jsonl" --set store.connect_timeout_ms=700)
  case $how in
  set) args+=(--set "store.uri=$uri") ;;
  env) export AGGREGATOR_STORE_URI=$uri ;;
  file) printf '[store]\nuri = %s\n' "$uri" >"$T/uri.ini" && args+=(-c "$T/uri.ini") ;;
  esac
  start=$(date +%s%N)
  run 1 "${args[@]}"
  ms=$((($(date +%s%N) - start) / 1000000))
  unset AGGREGATOR_STORE_URI
  [ "$ms" -ge 600 ] && [ "$ms" -lt 15000 ] || fail "$how: gave up after $ms ms, store.connect_timeout_ms is 700"
  errors=$(grep -c '"level":"error"' "$T/err")
  [ "$errors" -eq 1 ] || fail "$how: $errors error lines: $(cat "$T/err")"
  grep '"level":"error"' "$T/err" | grep -q "\"msg\":\"verify: the store did not answer within store.connect_timeout_ms\".*\"store\":\"mongodb://auditor:\*\*\*@127.0.0.1:$port/" ||
    fail "$how: the error does not name the store: $(cat "$T/err")"
  grep -q 's3cr3t' "$T/err" "$T/out" && fail "$how: the password was shown"
  grep -q 'does-not-exist' "$T/err" && fail "$how: the input was opened before the store answered"
  grep -q 'summary' "$T/err" && fail "$how: a summary of nothing: $(cat "$T/err")"
  [ -s "$T/out" ] && fail "$how: wrote to stdout"
done
# The text format: the same, as a text log line.
run 1 verify --input "$T/empty.jsonl" --set "store.uri=$uri" --set store.connect_timeout_ms=300 --set log.format=text
grep -Eq '^[0-9T:.Z-]+ error verify: the store did not answer within store\.connect_timeout_ms ' "$T/err" ||
  fail "text: $(cat "$T/err")"

# 3. Interrupted while it waits for the store: "interrupted", 128 + the signal, no summary, no progress.
for sig in INT TERM; do
  want=$((128 + $(kill -l "$sig")))
  : >"$T/err" # before the start: the wait below reads this run's lines only
  "$BIN" verify --input "$T/empty.jsonl" --set "store.uri=$uri" --set store.connect_timeout_ms=600000 \
    >"$T/out" 2>>"$T/err" &
  pid=$!
  for _ in $(seq 600); do grep -q 'store not answering, retrying' "$T/err" && break; sleep 0.1; done
  grep -q 'store not answering, retrying' "$T/err" || fail "$sig: no retry line: $(cat "$T/err")"
  kill -"$sig" "$pid"
  wait "$pid"
  rc=$?
  [ "$rc" -eq "$want" ] || fail "$sig: exit $rc, expected $want: $(cat "$T/err")"
  grep -q '"level":"error","msg":"verify: interrupted","signal":'"$(kill -l "$sig")"',"compared":0}' "$T/err" ||
    fail "$sig: not said: $(cat "$T/err")"
  grep -Eq 'summary|compared [0-9]+ of|progress' "$T/err" && fail "$sig: claims work: $(cat "$T/err")"
  [ -s "$T/out" ] && fail "$sig: wrote to stdout"
done

# 4. A store URI that is not one: a configuration error (exit 2), before anything else.
run 2 verify --input "$T/empty.jsonl" --set store.uri=http://nowhere
finish test_verify_cli

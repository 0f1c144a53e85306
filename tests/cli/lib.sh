# What the command-line tests share; sourced, not run. Sets BIN (the
# aggregator binary, $AGGREGATOR) and T (a scratch directory removed on
# exit), clears the AGGREGATOR_ variables of the caller's environment (a test
# sets the ones it means), and keeps the count of passed and failed checks.
BIN="${AGGREGATOR:?AGGREGATOR must name the aggregator binary}"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
for v in $(env | sed -n 's/^\(AGGREGATOR_[A-Z0-9_]*\)=.*/\1/p'); do unset "$v"; done

fails=0
passes=0
ok() { passes=$((passes + 1)); }
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# run EXPECTED_STATUS ARGS...: runs the binary, stdout to $T/out, stderr to $T/err.
run() {
  local want="$1"; shift
  "$BIN" "$@" >"$T/out" 2>"$T/err"
  local got=$?
  [ "$got" = "$want" ] || fail "'$*' exited $got, expected $want; stderr: $(cat "$T/err")"
}

# finish WHAT: the exit status of the test, with a closing line.
finish() {
  if [ "$fails" -ne 0 ]; then
    echo "$fails failure(s)" >&2
    exit 1
  fi
  if [ "$passes" -gt 0 ]; then echo "$1: all $passes checks passed"; else echo "$1: all checks passed"; fi
}

# The checks of the command-line tests that run a whole tool and keep their
# own scratch files (lib.sh is for the tests of the aggregator binary);
# sourced, not run. check DESCRIPTION COMMAND... counts COMMAND's success;
# checks_finish PREFIX prints "PREFIXN passed, N failed" and is the exit
# status of the test.
fails=0
passes=0
check() {
  local what=$1
  shift
  if "$@"; then passes=$((passes + 1)); else
    echo "FAIL: $what" >&2
    fails=$((fails + 1))
  fi
}
checks_finish() {
  echo "$1$passes passed, $fails failed"
  [ "$fails" -eq 0 ]
}

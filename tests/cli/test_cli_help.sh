#!/usr/bin/env bash
# The command line explains itself: `aggregator help [COMMAND]`, `--help` and
# `-h` for every command exit 0 with the help on stdout; usage errors exit 2
# with one line on stderr that points at the command's help.
# Env: AGGREGATOR (the binary).
set -u
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# ERE that matches the text literally.
literal() { printf '%s' "$1" | sed 's/[][|.*+?(){}^$\\]/\\&/g'; }

stdout_has() { grep -qF -- "$1" "$T/out" || fail "stdout of '$2' lacks '$1'"; }
quiet_stderr() { [ -s "$T/err" ] && fail "'$1' wrote to stderr: $(cat "$T/err")"; true; }

# --- the program's help ----------------------------------------------------
for args in "--help" "-h" "help"; do
  # shellcheck disable=SC2086
  run 0 $args
  quiet_stderr "$args"
  for cmd in run replay verify "config check" "config show" "config describe" "help [COMMAND]"; do
    grep -qE "^  $(literal "$cmd")  " "$T/out" || fail "'$args' does not list $cmd"
  done
  for opt in "-c, --config FILE" "--set SECTION.KEY=VALUE" "--from TIME" "--until TIME" "--input FILE|-" \
    "--output FILE|-" "--rejects FILE" "--max-rejects N" "--repair" "--allow-empty"; do
    grep -qE -- "^  $(literal "$opt")  +[a-z]" "$T/out" || fail "'$args' does not explain $opt"
  done
  stdout_has "Kafka timestamp" "$args"
  stdout_has "- for standard input" "$args"
  stdout_has "- for standard output" "$args"
  stdout_has "--rejects FILE keeps the lines of --input" "$args"
  stdout_has "Exit status: 0 success, 1 runtime failure, 2 usage or configuration error, 3 drift found" "$args"
done
cp "$T/out" "$T/program.txt"

# --- each command's help, three ways, the same text ----------------------------
# command|options it must explain
while IFS='|' read -r cmd opts; do
  # shellcheck disable=SC2086
  run 0 help $cmd
  quiet_stderr "help $cmd"
  cp "$T/out" "$T/help.txt"
  grep -q "^aggregator $cmd: " "$T/help.txt" || fail "help $cmd: no title line"
  grep -q "^usage: aggregator $cmd" "$T/help.txt" || fail "help $cmd: no usage line"
  for opt in $opts; do
    grep -qE -- "^  (-[a-z], )?$opt( [A-Z.|=-]+)? +[a-z]" "$T/help.txt" || fail "help $cmd does not explain $opt"
  done
  for flag in --help -h; do
    # shellcheck disable=SC2086
    run 0 $cmd $flag
    quiet_stderr "$cmd $flag"
    cmp -s "$T/out" "$T/help.txt" || fail "'$cmd $flag' differs from 'help $cmd'"
  done
done <<'EOF'
run|--config --set --help
replay|--config --set --from --until --input --output --rejects --max-rejects --help
verify|--config --set --from --until --input --repair --allow-empty --help
config|--config --set --origin --help
config check|--config --set --help
config show|--config --set --origin --help
config describe|--config --set --help
help|--help
EOF

# Options a command does not take are not in its help.
run 0 help run
grep -qE -- "--(from|until|input|output|rejects|repair|max-rejects|allow-empty)" "$T/out" &&
  fail "help run names options run does not take"
run 0 help verify
grep -qE -- "--(output|rejects|max-rejects) " "$T/out" && fail "help verify names replay's options"
for text in "store.connect_timeout_ms" "--allow-empty" "128 + the signal"; do
  grep -qF -- "$text" "$T/out" || fail "help verify does not explain $text"
done
run 0 help replay
grep -qF -- "--allow-empty" "$T/out" && fail "help replay names verify's --allow-empty"
for text in "whole or absent" "renamed into place" "JSON log line" "replay: read=N"; do
  grep -qF -- "$text" "$T/out" || fail "help replay does not explain $text"
done
run 0 help config check
grep -qF -- "--origin" "$T/out" && fail "help config check names --origin (show's only)"
run 0 help config
for action in check show describe; do grep -qE "^  $action  " "$T/out" || fail "help config does not list $action"; done

# --help wins over what precedes it, once the command is known.
run 0 replay --from beginning --help
cmp -s "$T/out" <("$BIN" help replay) || fail "'replay --from beginning --help' is not replay's help"

# --- usage errors: exit 2, one line on stderr naming the help, nothing on stdout
# usage_error HINT_COMMAND EXPECTED_TEXT ARGS...
usage_error() {
  local hint="$1" text="$2"; shift 2
  run 2 "$@"
  [ "$(wc -l <"$T/err")" = 1 ] || fail "'$*': stderr is not one line: $(cat "$T/err")"
  grep -qF -- "$text" "$T/err" || fail "'$*': stderr lacks '$text': $(cat "$T/err")"
  grep -qF -- "(see 'aggregator help${hint:+ $hint}')" "$T/err" || fail "'$*': no hint to help $hint: $(cat "$T/err")"
  [ -s "$T/out" ] && fail "'$*' wrote to stdout"
  true
}
usage_error "" "missing command"
usage_error "" "unknown command 'frobnicate'" frobnicate
usage_error "" "unknown command 'frobnicate'" help frobnicate
usage_error "" "help takes one command" help config show extra
usage_error "" "--version takes no argument, not 'run'" --version run
usage_error "run" "unknown option '--bogus'" run --bogus
usage_error "run" "unexpected argument 'extra'" run extra
usage_error "run" "run does not take --from" run --from beginning
usage_error "replay" "replay does not take --repair" replay --repair
usage_error "verify" "verify does not take --output" verify --output -
usage_error "replay" "--input needs a value (FILE|-)" replay --input
usage_error "run" "--set needs a value" run --set
usage_error "config" "config needs an action: check|show|describe" config
usage_error "config" "unknown config action 'frobnicate' (expected check, show or describe)" config frobnicate
usage_error "config" "unknown config action '-c'" config -c x.ini check
usage_error "config check" "unknown option '--origin-typo'" config check --origin-typo
# One configuration file: a second -c would silently replace the first.
usage_error "run" "-c/--config given twice: it takes one FILE" run -c a.ini -c b.ini
usage_error "config check" "-c/--config given twice" config check --config a.ini -c b.ini
usage_error "replay" "--input given twice: it takes one FILE|-" replay --input a --input b --output -
usage_error "verify" "--until given twice" verify --until end --until end
# --set repeats: two of them are no usage error (the configuration decides).
run 0 config check --set batch.linger_ms=5 --set batch.max_commands=10

finish "CLI help and usage errors"

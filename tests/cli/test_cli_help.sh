#!/usr/bin/env bash
# The command line explains itself: `aggregator help [COMMAND]`, `--help` and
# `-h` for every command exit 0 with the help on stdout; usage errors exit 2
# with one line on stderr that points at the command's help; no command at
# all exits 2 with the program's help on stderr.
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
  for cmd in run replay verify export "config check" "config show" "config describe" "help [COMMAND]"; do
    grep -qE "^  $(literal "$cmd")  " "$T/out" || fail "'$args' does not list $cmd"
  done
  for opt in "-c, --config FILE" "--set SECTION.KEY=VALUE" "--from beginning|TIME" "--until end|TIME" \
    "--input FILE|-" "--output FILE|-" "--rejects FILE|-" "--max-rejects N" "--repair" "--allow-empty"; do
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
    grep -qE -- "^  (-[a-z], )?$opt( [A-Za-z.|=-]+)? +[a-z]" "$T/help.txt" || fail "help $cmd does not explain $opt"
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
export|--config --set --from --until --output --help
config|--config --set --origin --help
config check|--config --set --help
config show|--config --set --origin --help
config describe|--config --set --help
help|--help
EOF

# Options a command does not take are not in its help.
run 0 help export
grep -qE -- "^  --(input|rejects|repair) " "$T/out" && fail "help export names options export does not take"
grep -qF "committed:GROUP or offsets:P=O" "$T/out" || fail "help export does not name the bound forms"
grep -qF "newline" "$T/out" || fail "help export does not say what becomes of a value holding a newline"
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
# Each option under the heading of the actions that take it: -h, as -c and
# --set, under all three ("Options of config"), not under one of them.
# heading_of OPTION: the "Options of ..." line above OPTION's line.
heading_of() { awk -v o="$1" '/^Options of /{h=$0} index($0, "  " o " ")==1 || index($0, "  " o ",")==1 {print h; exit}' "$T/out"; }
for opt in -c --set -h; do
  [ "$(heading_of "$opt")" = "Options of config:" ] || fail "help config lists $opt under '$(heading_of "$opt")'"
done
[ "$(heading_of --origin)" = "Options of config show:" ] || fail "help config lists --origin under '$(heading_of --origin)'"
[ "$(grep -c -- '--help' "$T/out")" = 1 ] || fail "help config lists -h, --help more than once"

# What the options take, as the help names it, is what the parser takes.
# --from beginning|TIME and --until end|TIME: the words and a time pass the
# bound check (the run then stops at the missing file), the other word not.
for cmd in replay verify; do
  run 0 help $cmd
  grep -qE -- "^  --from beginning\|TIME +start at the beginning" "$T/out" || fail "help $cmd does not name --from beginning"
  grep -qE -- "^  --until end\|TIME +stop at the end" "$T/out" || fail "help $cmd does not name --until end"
  for bounds in "--from beginning --until end" "--from 2026-01-01T00:00:00Z --until 2026-02-01T00:00:00.5Z"; do
    # shellcheck disable=SC2086
    run 2 $cmd $bounds -c "$T/absent.ini"
    grep -qF "absent.ini" "$T/err" || fail "'$cmd $bounds' refused the bounds its help names: $(cat "$T/err")"
  done
  for bounds in "--from end" "--until beginning" "--from 2026-01-01"; do
    # shellcheck disable=SC2086
    run 2 $cmd $bounds -c "$T/absent.ini"
    grep -qF "take beginning/end, an RFC 3339 UTC time, committed:GROUP or offsets:P=O" "$T/err" || fail "'$cmd $bounds' is not refused: $(cat "$T/err")"
  done
done
# A FILE|- option takes - for standard input or output: --rejects - writes
# the rejects to standard output.
run 0 help replay
grep -qE -- "^  --rejects FILE\|- +with --input: .*- for standard output" "$T/out" || fail "help replay: --rejects does not take -"
printf '{"not":"a command"}\n' >"$T/one.jsonl"
run 0 replay --input "$T/one.jsonl" --output "$T/docs.jsonl" --rejects -
grep -qF '"line":1' "$T/out" || fail "replay --rejects - wrote no reject to standard output: $(cat "$T/out")"

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
usage_error "" "unknown command 'frobnicate'" frobnicate
usage_error "" "unknown command 'frobnicate'" help frobnicate
usage_error "" "help takes one command" help config show extra
usage_error "" "--version takes no argument, not 'run'" --version run
usage_error "" "-V takes no argument, not 'run'" -V run
usage_error "run" "unknown option '--bogus'" run --bogus
usage_error "run" "unexpected argument 'extra'" run extra
usage_error "run" "run does not take --from" run --from beginning
usage_error "replay" "replay does not take --repair" replay --repair
usage_error "verify" "verify does not take --output" verify --output -
usage_error "replay" "--input needs a value (FILE|-)" replay --input
usage_error "export" "export does not take --input" export --input x --output -
usage_error "export" "--output FILE|- is required" export
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
# No command at all: the program's help, on stderr as for a usage error,
# and exit 2.
run 2
cmp -s "$T/err" "$T/program.txt" || fail "'aggregator' alone does not print the program's help on stderr"
[ -s "$T/out" ] && fail "'aggregator' alone wrote to stdout"

# --set repeats: two of them are no usage error (the configuration decides).
run 0 config check --set batch.linger_ms=5 --set batch.max_commands=10

# docs/CLI.md shows a usage error as the binary prints it: one line, the
# hint to the help, no usage after it.
DOC="${AGG_SOURCE_DIR:-$(dirname "${BASH_SOURCE[0]}")/../..}/docs/CLI.md"
run 2 replay --repair
grep -qF -- "\`$(cat "$T/err")\`" "$DOC" || fail "docs/CLI.md does not show the usage error as printed: $(cat "$T/err")"
grep -qiE -- "then the usage" "$DOC" && fail "docs/CLI.md says a usage follows an error line"

finish "CLI help and usage errors"

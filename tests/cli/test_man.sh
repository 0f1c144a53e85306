#!/usr/bin/env bash
# The man pages the build writes (man/gen_man.c): aggregator(1) and
# aggregator.ini(5) render with `man --warnings=w` (every groff warning: the
# default set, and `all`, leave some out) and
# say nothing on stderr, and they hold every command and option of
# `aggregator help` and every key of `aggregator config describe`, so a row
# added to either table is in the pages.
# Env: AGGREGATOR (the binary), AGG_BINARY_DIR (the build tree).
set -u
# shellcheck source=tests/cli/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
MAN="${AGG_BINARY_DIR:?AGG_BINARY_DIR must name the build tree}/man"

# render PAGE OUT: the page as a terminal shows it, 80 columns, plain text;
# groff's warnings go to $T/warn.
render() {
  MANPAGER=cat MANWIDTH=80 MAN_KEEP_FORMATTING= man --warnings=w -l "$1" 2>"$T/warn" | col -bx >"$2"
}

# First a page with a mistake: the check sees groff's warnings.
printf '.TH X 1\n.SH NAME\nx \\- y\n.BOGUS\n' >"$T/bad.1"
render "$T/bad.1" "$T/bad.txt"
grep -q "BOGUS" "$T/warn" || fail "man --warnings did not report an undefined macro: $(cat "$T/warn")"

for page in aggregator.1 aggregator.ini.5; do
  [ -s "$MAN/$page" ] || { fail "$MAN/$page was not built"; continue; }
  render "$MAN/$page" "$T/$page.txt"
  [ -s "$T/warn" ] && fail "$page: groff warns: $(cat "$T/warn")"
  [ -s "$T/$page.txt" ] || fail "$page renders empty"
  # The installed copy is the same page.
  if ! gzip -dc "$MAN/$page.gz" | cmp -s - "$MAN/$page"; then fail "$page.gz is not $page"; fi
  ok
done

# Every option and command of the program's help is in aggregator(1).
run 0 --help
opts="$(grep -oE -- '--[a-z][a-z-]*' "$T/out" | sort -u)"
[ -n "$opts" ] || fail "no option found in --help"
for o in $opts; do
  grep -qF -- "$o" "$T/aggregator.1.txt" && ok || fail "aggregator(1) lacks $o"
done
cmds="$(sed -n '/^Commands:/,/^$/s/^  \([a-z]\+\( [a-z]\+\)\?\).*/\1/p' "$T/out" | sed 's/ \(\[\|check|\).*//' | sort -u)"
[ -n "$cmds" ] || fail "no command found in --help"
while read -r c; do
  grep -qE -- "^ +(aggregator )?$c( |\$)" "$T/aggregator.1.txt" && ok || fail "aggregator(1) lacks the command '$c'"
done <<<"$cmds"
for s in "EXIT STATUS" ENVIRONMENT FILES EXAMPLES; do
  grep -q "^$s" "$T/aggregator.1.txt" && ok || fail "aggregator(1) has no $s section"
done

# Every key of config describe is in aggregator.ini(5), under its section.
run 0 config describe
keys="$(sed -n 's/^  \([a-z_]*\)\.\([a-z_.]*\) = .*/\1 \2/p' "$T/out")"
[ "$(printf '%s\n' "$keys" | wc -l)" -ge 20 ] || fail "config describe lists too few keys: $keys"
while read -r section key; do
  awk -v s="[$section]" -v k="$key" '$0 == s { on = 1; next } /^[^ ]/ { on = 0 } on && $1 == k { found = 1 }
    END { exit !found }' "$T/aggregator.ini.5.txt" && ok || fail "aggregator.ini(5) lacks $section.$key"
done <<<"$keys"

finish test_man

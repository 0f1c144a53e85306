#!/usr/bin/env bash
# The rules of the tree that no compiler checks:
#   - README.md and docs/ hold current facts and history stays in git: no
#     commit id, no "this tree", no date or clock time of a run;
#   - docs/BENCHMARKS.md is a page of at most 300 lines;
#   - no product source (models/, worker/) over 900 lines, no script over 800.
# Env: AGG_SOURCE_DIR.
set -u
# shellcheck source=tests/cli/checks.sh
. "$(dirname "${BASH_SOURCE[0]}")/checks.sh"
SRC="${AGG_SOURCE_DIR:?AGG_SOURCE_DIR must name the source tree}"
cd "$SRC" || exit 1
docs=(README.md docs/*.md)

# none DESCRIPTION TEXT: passes when TEXT is empty, else prints it.
none() { [ -z "$2" ] || { echo "$1:" >&2; printf '%s\n' "$2" >&2; return 1; }; }

# A commit id: 7 to 40 hex digits with a letter and a digit among them.
check "no commit id in the docs" none "commit ids" \
  "$(grep -nowE '[0-9a-f]{7,40}' "${docs[@]}" | grep -E ':[0-9]*[a-f]+[0-9]|:[0-9]+[a-f]')"
# Dates of runs; a command's timestamp is written with a T and is not one.
check "no history in the docs" none 'dates, times of runs or "this tree"' \
  "$(grep -niP 'this tree|\b20[0-9]{2}-[01][0-9]-[0-3][0-9]\b(?!T)|(?<!T)\b[0-2][0-9]:[0-5][0-9](:[0-5][0-9])? ?UTC\b' "${docs[@]}")"
check "docs/BENCHMARKS.md within 300 lines" test "$(wc -l <docs/BENCHMARKS.md)" -le 300
check "no product file over 900 lines" none "over 900 lines" \
  "$(find models worker -name '*.[ch]' -exec wc -l {} + | awk '$2 != "total" && $1 > 900')"
check "no script over 800 lines" none "over 800 lines" \
  "$(find scripts -type f ! -name '*.csv' -exec wc -l {} + | awk '$2 != "total" && $1 > 800')"
checks_finish "tree rules: "

#!/usr/bin/env bash
# dlock(1) against the built command: every subcommand of `dlock --help` has
# a SYNOPSIS line, and the options that `dlock --help` and `dlock CMD --help`
# show are exactly the options the man page describes under GLOBAL OPTIONS
# and COMMAND OPTIONS.
#   manpage_cli.sh DLOCK SOURCE_DIR
set -euo pipefail
dlock=$1 page=$2/docs/dlock.1
fail=0

commands=$("$dlock" --help | awk '/^Commands:/ { on = 1; next } on && !NF { exit } on { print $1 }')
[ -n "$commands" ] || { echo "no subcommands in dlock --help" >&2; exit 1; }
for c in $commands; do
  grep -qx "\.B $c" "$page" || { echo "dlock.1: no SYNOPSIS line for $c" >&2; fail=1; }
done

# The options a help text shows: -x and --long-name, wherever they stand.
help_options() {
  { "$dlock" --help; for c in $commands; do "$dlock" "$c" --help; done; } |
    grep -oE '(^|[[ ,])--?[a-zA-Z][a-z-]*' | sed 's/^[[ ,]*//' | sort -u
}
# The options the page describes: the .TP heads of its two option sections,
# with troff's escapes and fonts taken out.
page_options() {
  awk '/^\.SH (GLOBAL|COMMAND) OPTIONS/ { on = 1; next } /^\.SH/ { on = 0 }
       on && prev == ".TP" { print } { prev = $0 }' "$page" |
    sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' |
    grep -oE '(^|[ ",])--?[a-zA-Z][a-z-]*' | sed 's/^[ ",]*//' | sort -u
}
help=$(help_options) man=$(page_options)
only_help=$(comm -23 <(echo "$help") <(echo "$man"))
only_man=$(comm -13 <(echo "$help") <(echo "$man"))
[ -z "$only_help" ] || { echo "dlock.1 does not describe:" $only_help >&2; fail=1; }
[ -z "$only_man" ] || { echo "dlock.1 describes what no --help shows:" $only_man >&2; fail=1; }
[ "$fail" = 0 ]
echo "dlock.1 ok: $(wc -w <<<"$commands") subcommands, $(wc -l <<<"$help") options"

#!/usr/bin/env bash
# The bash completion the build wrote (completion.bash.in and the command's
# tables) against the built dlock: it offers every subcommand of `dlock
# --help`, and before the command and after each exactly the options that
# help shows there (test_cli_table holds the help to the option table).
#   completion.sh DLOCK COMPLETION
set -euo pipefail
dlock=$1 completion=$2
# shellcheck source=/dev/null # written by the build
. "$completion"

# complete WORD...: what completing the last word offers, one a line.
complete_words() {
  COMP_WORDS=("$dlock" "$@")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMPREPLY=()
  _dlock
  printf '%s\n' "${COMPREPLY[@]}"
}

fail() { echo "completion: $*" >&2; exit 1; }

# help_options [COMMAND]: the options of a help's option lines ("  -t, --ttl
# DUR  ...", "      --json  ..."), one a line, sorted.
help_options() {
  "$dlock" ${1:+"$1"} --help | grep -E '^(  -[a-zA-Z]|      --[a-z])' | sed -E 's/^ +//; s/  .*//' |
    grep -oE -- '(^|[ ,])--?[a-zA-Z][a-z-]*' | sed 's/^[ ,]*//' | sort -u
}

listed=$("$dlock" --help | awk '/^Commands:/ { on = 1; next } on && !NF { exit } on { print $1 }')
[ -n "$listed" ] || fail "no subcommands in dlock --help"
[ "$(complete_words "")" = "$listed" ] || fail "subcommands: got $(complete_words "" | xargs)"
[ "$(complete_words - | sort -u)" = "$(help_options)" ] ||
  fail "global options: got $(complete_words - | xargs), dlock --help shows $(help_options | xargs)"
for c in $listed; do
  [ "$(complete_words "$c" - | sort -u)" = "$(help_options "$c")" ] ||
    fail "$c: got $(complete_words "$c" - | xargs), dlock $c --help shows $(help_options "$c" | xargs)"
done
# A subcommand after global options and their values.
[ "$(complete_words -r redis://127.0.0.1:1 --tls st)" = status ] || fail "status after global options"
complete_words --ins | grep -x -- --insecure >/dev/null || fail "global --insecure"
complete_words run --k | grep -x -- --kill-after >/dev/null || fail "run --kill-after"
complete_words status --j | grep -x -- --json >/dev/null || fail "status --json"
complete_words acquire - | grep -x -- -n >/dev/null || fail "acquire -n"
[ "$(complete_words guard l)" = load-redis ] || fail "guard's action"
complete_words --aud | grep -x -- --audit >/dev/null || fail "global --audit"
complete_words audit --s | grep -x -- --svg >/dev/null || fail "audit --svg"
complete_words audit --s | grep -x -- --since >/dev/null || fail "audit --since"
# A name or an option's value is not completed as a subcommand or option.
[ -z "$(complete_words run -t 5s)" ] || fail "run -t's value"
[ -z "$(complete_words run myjob "")" ] || fail "after the name"
[ -z "$(complete_words --user "")" ] || fail "--user's value"
# A FILE is completed as a file name, a DIR as a directory.
dir=$(mktemp -d /tmp/dlock-completion-XXXXXX)
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/certs" && : >"$dir/ca.pem"
[ "$(complete_words --cacert "$dir/ca")" = "$dir/ca.pem" ] || fail "--cacert's file"
[ "$(complete_words --cacertdir "$dir/")" = "$dir/certs" ] || fail "--cacertdir's directory"
echo "completion ok: $(wc -w <<<"$listed") subcommands and their options"

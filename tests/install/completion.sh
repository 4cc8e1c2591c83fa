#!/usr/bin/env bash
# The bash completion (tools/dlock/completion.bash) against the built dlock:
# it offers every subcommand of `dlock --help` and the options of each.
#   completion.sh DLOCK SOURCE_DIR
set -euo pipefail
dlock=$1 src=$2
. "$src/tools/dlock/completion.bash"

# complete WORD...: what completing the last word offers, one a line.
complete_words() {
  COMP_WORDS=("$dlock" "$@")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMPREPLY=()
  _dlock
  printf '%s\n' "${COMPREPLY[@]}"
}

fail() { echo "completion: $*" >&2; exit 1; }

listed=$("$dlock" --help | awk '/^Commands:/ { on = 1; next } on && !NF { exit } on { print $1 }')
[ -n "$listed" ] || fail "no subcommands in dlock --help"
[ "$(complete_words "")" = "$listed" ] || fail "subcommands: got $(complete_words "" | xargs)"
# A subcommand after global options and their values.
[ "$(complete_words -r redis://127.0.0.1:1 --tls st)" = status ] || fail "status after global options"
complete_words --ins | grep -x -- --insecure >/dev/null || fail "global --insecure"
complete_words run --k | grep -x -- --kill-after >/dev/null || fail "run --kill-after"
complete_words status --j | grep -x -- --json >/dev/null || fail "status --json (from its usage line)"
complete_words acquire - | grep -x -- -n >/dev/null || fail "acquire -n"
[ "$(complete_words guard l)" = load-redis ] || fail "guard's action"
complete_words --aud | grep -x -- --audit >/dev/null || fail "global --audit"
complete_words audit --s | grep -x -- --svg >/dev/null || fail "audit --svg"
complete_words audit --s | grep -x -- --since >/dev/null || fail "audit --since"
# A name or an option's value is not completed as a subcommand or option.
[ -z "$(complete_words run -t 5s)" ] || fail "run -t's value"
[ -z "$(complete_words run myjob "")" ] || fail "after the name"
echo "completion ok: $(wc -w <<<"$listed") subcommands and their options"

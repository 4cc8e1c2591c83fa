# bash completion for dlock(1).
#
# The subcommands and options are read from the dlock being completed
# (`dlock --help`, `dlock COMMAND --help`), so they are always the ones that
# command has: its help is generated from the same tables as its parser.

# _dlock_commands DLOCK: the subcommands listed under "Commands:".
_dlock_commands()
{
    "$1" --help 2>/dev/null | awk '/^Commands:/ { on = 1; next } on && !NF { exit } on { print $1 }'
}

# _dlock_options DLOCK [COMMAND]: one line per option of the global help (or
# the command's): its spellings, then "=" when it takes a value, e.g.
# "-r --redis =", "--insecure". Options come from the option lines and from
# the usage lines' brackets ("[-w WAIT | -n]", "[--json]").
_dlock_options()
{
    "$1" ${2:+"$2"} --help 2>/dev/null | awk '
        /^(Usage:| +dlock )/ {
            rest = $0
            while (match(rest, /\[-[^]]*\]/)) {
                n = split(substr(rest, RSTART + 1, RLENGTH - 2), alt, / *\| */)
                for (a = 1; a <= n; a++) {
                    split(alt[a], w, " ")
                    print w[1] (w[2] ~ /^[A-Z][A-Z_]*$/ ? " =" : "")
                }
                rest = substr(rest, RSTART + RLENGTH)
            }
        }
        /^ +-/ {
            head = $0
            sub(/^ +/, "", head)
            sub(/  .*/, "", head) # two spaces: the description begins
            n = split(head, w, /,? /)
            line = ""
            for (i = 1; i <= n; i++)
                line = line " " (w[i] ~ /^-/ ? w[i] : "=")
            print substr(line, 2)
        }'
}

# _dlock_takes_value OPTION OPTION-LINES: true if OPTION is followed by a value.
_dlock_takes_value()
{
    local line
    while read -r line; do
        [[ " $line " == *" $1 "* && $line == *" =" ]] && return 0
    done <<<"$2"
    return 1
}

_dlock()
{
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
    local dlock=${COMP_WORDS[0]} command="" i word options
    local -a commands
    mapfile -t commands < <(_dlock_commands "$dlock")
    options=$(_dlock_options "$dlock")

    # The subcommand is the first word that is not a global option or the
    # value of one; after it, its own options apply.
    for ((i = 1; i < COMP_CWORD; i++)); do
        word=${COMP_WORDS[i]}
        if [[ -n $command ]]; then
            # run's command after "--": complete it as a command line.
            if [[ $word == -- && $command == run ]]; then
                if declare -F _command_offset >/dev/null; then
                    _command_offset $((i + 1))
                elif ((i + 1 == COMP_CWORD)); then
                    mapfile -t COMPREPLY < <(compgen -c -- "$cur" | sort -u)
                fi
                return
            fi
            continue
        fi
        if [[ $word == -* ]]; then
            _dlock_takes_value "$word" "$options" && ((i++))
        else
            command=$word
            options=$(_dlock_options "$dlock" "$command")
        fi
    done

    if [[ $prev == -* ]] && _dlock_takes_value "$prev" "$options"; then
        case $prev in
            --cacert | --cert | --key | --stats-json | --metrics-file | --svg)
                mapfile -t COMPREPLY < <(compgen -f -- "$cur") ;;
            --cacertdir) mapfile -t COMPREPLY < <(compgen -d -- "$cur") ;;
        esac
        return
    fi
    if [[ $cur == -* ]]; then
        mapfile -t COMPREPLY < <(compgen -W "$(tr ' ' '\n' <<<"$options" | grep -v '^=$' | sort -u)" -- "$cur")
    elif [[ -z $command ]]; then
        mapfile -t COMPREPLY < <(compgen -W "${commands[*]}" -- "$cur")
    elif [[ $command == guard && $prev == guard ]]; then
        mapfile -t COMPREPLY < <(compgen -W "load-redis" -- "$cur")
    fi
}

# Anything else (a name, a token, run's arguments): file names.
complete -o bashdefault -o default -F _dlock dlock

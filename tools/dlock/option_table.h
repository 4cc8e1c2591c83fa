/* The one table of the command's options: for each, its names, its value,
 * its help text and where it is taken (before the command, or by which
 * commands). The parsers build getopt's arrays from it, --help prints it
 * (help.c), and the bash completion is generated from it at build time
 * (gen_completion.c). */
#ifndef DLOCK_CLI_OPTION_TABLE_H
#define DLOCK_CLI_OPTION_TABLE_H

#include "command_table.h"

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>

/* cli_option.where: CLI_GLOBAL, or CLI_IN() of each command that takes it. */
#define CLI_GLOBAL (1u << CLI_CMD_COUNT)
#define CLI_EVERY_COMMAND (CLI_GLOBAL - 1)

/* What getopt answers for an option without a letter. */
enum cli_option_key {
    CLI_KEY_USER = 256,
    CLI_KEY_VERSION,
    CLI_KEY_TLS,
    CLI_KEY_CACERT,
    CLI_KEY_CACERTDIR,
    CLI_KEY_CERT,
    CLI_KEY_KEY,
    CLI_KEY_SNI,
    CLI_KEY_INSECURE,
    CLI_KEY_AUDIT,
    CLI_KEY_KILL_AFTER,
    CLI_KEY_MAX_HOLD,
    CLI_KEY_SINCE,
    CLI_KEY_JSON,
    CLI_KEY_WATCH,
    CLI_KEY_PERMITS,
    CLI_KEY_FAIR,
    CLI_KEY_LEASE,
    CLI_KEY_REPLICAS,
    CLI_KEY_RESTART_DELAY,
    CLI_KEY_STATS_JSON,
    CLI_KEY_METRICS_FILE,
    CLI_KEY_SVG,
};

/* cli_option.flags */
#define CLI_AFTER_NAME 0x1u /* run's -c: one of its operands, not getopt's */

/* One option as `where` takes it. An option that commands describe each in
 * their own words has a row per wording, with the same key, name and value. */
struct cli_option {
    int key;           /* its letter (-t), or a CLI_KEY_* if it has none */
    const char *name;  /* --name, or NULL if it has none (-c) */
    const char *value; /* what --help calls its value ("DUR"), or NULL if it takes none */
    unsigned where;
    unsigned flags;
    const char *help; /* one paragraph, wrapped by --help */
};

/* The table; its last row has key 0. */
extern const struct cli_option cli_options[];

/* The row of `key` in `where` (one bit), or NULL if `where` does not take it. */
const struct cli_option *cli_option_find(unsigned where, int key);

/* The option of `where` that `text` is as typed ("-r", "--redis" or
 * "--redis=URL"), or NULL. */
const struct cli_option *cli_option_typed(unsigned where, const char *text);

/* Whether the option has a letter (-t), shown before its long name. */
bool cli_option_has_letter(const struct cli_option *o);

#define CLI_GETOPT_MAX 32 /* options one `where` takes */

/* getopt_long's arguments for `where`: ':' first, to tell a missing value,
 * after a '+' if getopt is to stop at the first operand. */
struct cli_getopt {
    char shortopts[2 * CLI_GETOPT_MAX + 3];
    struct option longopts[CLI_GETOPT_MAX + 1];
};
void cli_getopt_for(unsigned where, bool stop_at_operand, struct cli_getopt *out);

/* The option getopt_long just refused, for a message: a long one as typed
 * up to its '=', a short one by its letter (it may sit in a cluster getopt
 * has not left). */
void cli_offending_option(char **argv, const struct option *longopts, char *out, size_t len);

/* What getopt_long's refusal of a long option means when the option is not
 * simply unknown: a value given to one that takes none ("--json=1"), or an
 * abbreviation of several ("--re"). Writes that sentence, which repeats
 * no value, to `out` and returns true; false for an unknown option. */
bool cli_long_option_trouble(char **argv, const struct option *longopts, char *out, size_t len);

#endif

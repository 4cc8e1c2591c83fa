/* The subcommands: their names and what --help says of them. What each
 * takes is in the option table (option_table.h). */
#ifndef DLOCK_CLI_COMMAND_TABLE_H
#define DLOCK_CLI_COMMAND_TABLE_H

/* In the order `dlock --help` lists them. */
enum cli_command_id {
    CLI_CMD_RUN,
    CLI_CMD_ACQUIRE,
    CLI_CMD_RELEASE,
    CLI_CMD_EXTEND,
    CLI_CMD_STATUS,
    CLI_CMD_LIST,
    CLI_CMD_DOCTOR,
    CLI_CMD_CHECK,
    CLI_CMD_GUARD,
    CLI_CMD_AUDIT,
    CLI_CMD_COUNT
};

/* A command as a bit of the option table's `where`. */
#define CLI_IN(id) (1u << (id))

/* cli_command.flags */
#define CLI_RUN_OPERANDS 0x1u  /* NAME -- COMMAND or NAME -c CMD; options stop at NAME */
#define CLI_NAME_OPTIONAL 0x2u /* the one operand may be left out (NULL name) */

struct cli_command {
    const char *name;
    const char *summary;      /* its line in `dlock --help` */
    const char *operands;     /* after the options: "NAME TOKEN"; a lower-case word is typed as is */
    const char *operands_too; /* another form of them (run's -c), or NULL */
    int n_operands;           /* how many after the options (run: NAME, then the command) */
    unsigned flags;           /* CLI_RUN_OPERANDS, CLI_NAME_OPTIONAL */
    const char *about;        /* --help: what it does, before its options */
    const char *notes;        /* --help: after its options, or NULL */
};

/* Indexed by enum cli_command_id. */
extern const struct cli_command cli_commands[CLI_CMD_COUNT];

/* The command called `name`, or NULL. */
const struct cli_command *cli_command_named(const char *name);

/* CLI_IN() of cmd, which is one of cli_commands. */
unsigned cli_command_bit(const struct cli_command *cmd);

#endif

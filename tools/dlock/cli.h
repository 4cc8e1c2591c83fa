/* What the subcommands of the dlock command share. Only the public dlock.h
 * is used: the command knows nothing of sockets. */
#ifndef DLOCK_CLI_H
#define DLOCK_CLI_H

#include "acquire.h"
#include "client_open.h"
#include "exit_codes.h"
#include "failure.h"
#include "holder.h"
#include "json.h"
#include "messages.h"
#include "times.h"
#include "values.h"

#include <dlock.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>

#define CLI_URLS_MAX 16

struct cli {
    const char *urls[CLI_URLS_MAX];
    char *owned_urls[CLI_URLS_MAX]; /* copies, to free */
    size_t n_urls;
    const char *user;
    bool verbose, quiet;
    /* TLS, named as in redis-cli */
    bool tls, insecure;
    bool audit; /* --audit or DLOCK_AUDIT=1: the client option `audit` */
    const char *cacert, *cacertdir, *cert, *key, *sni;
};

/* cli_parse_global() answers for --help and --version: nothing to run. */
#define CLI_HELP (-2)
#define CLI_VERSION (-3)

/* Parses the global options (and $DLOCK_REDIS when no -r) from argv[1] on,
 * leaving optind at the command. Returns 0, CLI_HELP, CLI_VERSION or an
 * exit code after printing why. URL passwords are overwritten in argv. */
int cli_parse_global(struct cli *cli, int argc, char **argv);

/* If `option` as typed ("-r", "--redis", "--redis=URL") is a global option
 * (but -h or --help), writes how it is given ("-r URL") to out and returns
 * true: for a hint where it goes. */
bool cli_global_option(const char *option, char *out, size_t len);

/* Wipes and frees the URL copies. */
void cli_free_urls(struct cli *cli);

/* The option getopt_long just refused, for a message: a long one as typed,
 * a short one by its letter (it may sit in a cluster getopt has not left). */
struct option;
void cli_offending_option(char **argv, const struct option *longopts, char *out, size_t len);

struct cli_wait {
    int64_t ttl_ms;
    int64_t wait_ms; /* DLOCK_WAIT_FOREVER, 0 or a deadline */
    bool auto_renew;
    int64_t max_hold_ms;
    dlock_lost_fn on_lost;
    void *on_lost_arg;
    unsigned permits; /* --permits: 0 for a mutex */
    bool fair;        /* --fair */
    int64_t lease_ms; /* --lease: 0 for the library's default */
    bool shared;      /* -s, --shared */
};

/* What a subcommand accepts besides -h/--help: CLI_OPT_* flags. */
#define CLI_OPT_TTL 0x1u       /* -t, --ttl DUR */
#define CLI_OPT_WAIT 0x2u      /* -w, --wait DUR; -n, --nowait */
#define CLI_OPT_BUSY_CODE 0x4u /* -E, --conflict-exit-code CODE */
#define CLI_OPT_JSON 0x8u      /* --json */
#define CLI_OPT_RUN 0x10u      /* --kill-after, --max-hold; NAME -- COMMAND or NAME -c CMD */
#define CLI_OPT_PERMITS 0x20u  /* --permits N */
#define CLI_OPT_WATCH 0x40u    /* --watch */
#define CLI_OPT_STATS 0x80u    /* --stats-json FILE, --metrics-file FILE */
#define CLI_OPT_NAME_OPTIONAL 0x100u /* the one operand may be left out (NULL name) */
#define CLI_OPT_FAIR 0x200u     /* --fair, --lease DUR */
#define CLI_OPT_SHARED 0x400u   /* -s, --shared */
#define CLI_OPT_REPLICAS 0x800u /* --replicas K */
#define CLI_OPT_RESTART 0x1000u /* --restart-delay DUR */

struct cli_command {
    const char *name;
    const char *help;     /* printed for -h, --help */
    unsigned accepts;     /* CLI_OPT_* */
    const char *operands; /* for usage errors: "NAME TOKEN" */
    int n_operands;       /* how many after the options (run: NAME, then the command) */
};

extern const struct cli_command cli_command_run, cli_command_acquire, cli_command_release,
    cli_command_extend, cli_command_status, cli_command_list, cli_command_doctor,
    cli_command_check, cli_command_guard;

/* A subcommand's options, defaults filled in. Pointers are into argv. */
struct cli_command_opts {
    struct cli_wait wait; /* ttl_ms, wait_ms, max_hold_ms */
    int busy_code;
    int64_t kill_after_ms;
    bool json;
    long long permits; /* --permits as given; wait.permits when it is in range */
    bool watch;             /* status --watch */
    const char *stats_json; /* run --stats-json FILE */
    const char *metrics_file; /* run --metrics-file FILE */
    const char *name;       /* NULL when an optional operand was left out */
    const char *token;         /* release, extend */
    char **command;            /* run: the command's argv, or NULL with shell_command */
    const char *shell_command; /* run -c */
    int replicas;              /* --replicas: WAIT for this many; 0: no WAIT */
    int64_t restart_delay_ms;  /* --restart-delay; 0: off */
};

/* Parses the arguments of subcommand `cmd` (argv[0] is its name). Returns
 * 0, CLI_HELP after printing the help, or EXIT_USAGE after saying why. */
int cli_parse_command(const struct cli_command *cmd, int argc, char **argv,
                      struct cli_command_opts *o);

/* Writes the holds of `audit` as an SVG timeline to `path` (audit_svg.c).
 * Returns 0, or -1 after saying why. */
int cli_write_audit_svg(const dlock_audit *audit, const char *name, const char *path);

int cmd_run(struct cli *cli, int argc, char **argv);
int cmd_acquire(struct cli *cli, int argc, char **argv);
int cmd_release(struct cli *cli, int argc, char **argv);
int cmd_extend(struct cli *cli, int argc, char **argv);
int cmd_status(struct cli *cli, int argc, char **argv);
int cmd_list(struct cli *cli, int argc, char **argv);
int cmd_doctor(struct cli *cli, int argc, char **argv);
int cmd_check(struct cli *cli, int argc, char **argv);
int cmd_guard(struct cli *cli, int argc, char **argv);
int cmd_audit(struct cli *cli, int argc, char **argv);

/* A status as status prints it: "NAME: held by ..., fence N" on a line, or
 * with json the fields of its JSON object ("name", "held", "ttl_ms",
 * "fence", "holder"), without the braces. */
void cli_print_status(const char *name, const dlock_status *st, bool json);

/* Writes the client's counters (dlock_client_stats) to `path` as one JSON
 * object. Returns 0, or -1 after saying why. */
int cli_write_stats(dlock_client *client, const char *path);

/* Replaces the file at `path` with the client's counters as Prometheus text
 * (dlock_client_metrics()), atomically. Returns 0, or -1 after saying why. */
int cli_write_metrics(dlock_client *client, const char *path);

#endif

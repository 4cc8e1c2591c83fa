/* What the subcommands of the dlock command share. Only the public dlock.h
 * is used: the command knows nothing of sockets. */
#ifndef DLOCK_CLI_H
#define DLOCK_CLI_H

#include "exit_codes.h"

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

/* Messages on stderr, prefixed "dlock: ". */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cli_info(const struct cli *cli, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cli_debug(const struct cli *cli, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The option getopt_long just refused, for a message: a long one as typed,
 * a short one by its letter (it may sit in a cluster getopt has not left). */
struct option;
void cli_offending_option(char **argv, const struct option *longopts, char *out, size_t len);

/* Prints a usage error for `command` and returns EXIT_USAGE. */
int cli_usage_error(const char *command, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The exit code for a library error code. */
int cli_exit_code(int rc);

/* Reports a library failure ("dlock: what: detail") and returns its exit code. */
int cli_fail(dlock_client *client, int rc, const char *what);

/* "NAME holds a hash, not a lock (WRONGTYPE)", after a status query that
 * found it; returns the exit code. */
int cli_wrong_type(dlock_client *client, const char *name);

/* Reports a failed acquire of `name` (not busy) as cli_fail() does, but a
 * name that holds a hash, a list... in status's words. */
int cli_acquire_failed(dlock_client *client, int rc, const char *name);

/* Durations: a bare number is seconds (fractions allowed, like flock), or a
 * number with ms, s, m or h. Returns 0 and the milliseconds, or -1. */
int cli_parse_duration_ms(const char *s, int64_t *ms);

/* Milliseconds on CLOCK_MONOTONIC. */
int64_t cli_now_ms(void);

/* An exit code 0..255 for -E. Returns 0 or -1. */
int cli_parse_exit_code(const char *s, int *code);

/* Opens a client on the servers chosen by the global options. Returns 0 or
 * an exit code (after printing why). */
int cli_open_client(const struct cli *cli, dlock_client **out);


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

/* Acquires `name`, waiting as asked, through failing servers too (until
 * the wait's end); on a terminal shows a status line that says who holds
 * the lock, or what keeps us from the servers, and how long we have
 * waited. With -v it says, on any stderr, when a wait starts (and for
 * whom), each retry after a failure, and how long it took. Reports a
 * failure other than busy and cancel itself (cli_acquire_failed(), or
 * "NAME: gave up after 30.0 s: DETAIL"): the caller maps it to its exit
 * code. */
int cli_acquire(const struct cli *cli, dlock_client *client, const char *name,
                const struct cli_wait *how, dlock_lock **out);

/* After DLOCK_EBUSY: says who holds `name` ("NAME is busy: held by HOST pid
 * PID since TIME, expires in 12.3 s") and returns busy_code. */
int cli_busy(const struct cli *cli, dlock_client *client, const char *name, int busy_code);

/* A holder, in the words every message uses: "held by HOST pid PID since
 * TIME" or "held by another client (no owner record)", then ", expires in
 * 12.3 s" or ", never expires (no TTL)". */
void cli_describe_holder(const dlock_status *st, char *out, size_t len);

/* A time in ms since the Unix epoch as "2026-11-29T12:34:56Z". */
void cli_format_time(int64_t ms, char *out, size_t len);

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

/* cli_open_client() with the command's --replicas and --restart-delay. */
int cli_open_client_for(const struct cli *cli, const struct cli_command_opts *o,
                        dlock_client **out);

/* The same, for looking at the servers (doctor): it opens two of them, or
 * one given twice, which cli_open_client() refuses; `o` as for
 * cli_open_client_for(). */
int cli_open_inspector(const struct cli *cli, const struct cli_command_opts *o,
                       dlock_client **out);

/* Parses the arguments of subcommand `cmd` (argv[0] is its name). Returns
 * 0, CLI_HELP after printing the help, or EXIT_USAGE after saying why. */
int cli_parse_command(const struct cli_command *cmd, int argc, char **argv,
                      struct cli_command_opts *o);

/* Writes `s` as a JSON string (with quotes) to stdout: valid UTF-8 as it
 * is, control characters escaped, and each byte that is not part of valid
 * UTF-8 as \ufffd (the replacement character), so the output is UTF-8. */
void cli_print_json_string(const char *s);

/* The same, to `f`. */
void cli_write_json_string(FILE *f, const char *s);

/* The length of the valid UTF-8 sequence at s (1 to 4), or 0. */
size_t cli_utf8_length(const unsigned char *s);

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

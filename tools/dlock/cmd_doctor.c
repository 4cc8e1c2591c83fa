/* doctor: can these servers keep a lock? The library finds; this prints. */
#include "cli.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static const char *const severity_names[] = {"info", "warning", "error"};

static void print_text(const dlock_finding *f)
{
    printf("%-7s %s%s%s%s: %s\n        fix: %s\n", severity_names[f->severity], f->id,
           f->server[0] ? " (" : "", f->server, f->server[0] ? ")" : "", f->evidence, f->fix);
}

static void print_json(const dlock_finding *f, size_t i)
{
    printf("%s{\"id\":\"%s\",\"severity\":\"%s\",\"server\":", i ? "," : "", f->id,
           severity_names[f->severity]);
    cli_print_json_string(f->server);
    printf(",\"evidence\":");
    cli_print_json_string(f->evidence);
    printf(",\"fix\":");
    cli_print_json_string(f->fix);
    if (strcmp(f->id, "CLOCK_SKEW") == 0)
        printf(",\"offset_ms\":%" PRId64, f->offset_ms);
    else if (strcmp(f->id, "SLOW") == 0)
        printf(",\"rtt_ms\":%" PRId64, f->offset_ms);
    putchar('}');
}

/* 69 when a server could not be reached, 77 when one refused the
 * credentials, 78 for any other error, else 0. */
static int exit_code_of(const dlock_report *report)
{
    int rc = dlock_report_worst(report) == DLOCK_SEVERITY_ERROR ? EXIT_FINDINGS : EXIT_DONE;
    for (size_t i = 0; i < dlock_report_count(report); i++) {
        const char *id = dlock_report_finding(report, i)->id;
        if (strcmp(id, "UNREACHABLE") == 0)
            return EXIT_UNAVAILABLE;
        if (strcmp(id, "AUTH_FAILED") == 0)
            rc = EXIT_AUTH;
    }
    return rc;
}

int cmd_doctor(struct cli *cli, int argc, char **argv)
{
    struct cli_command_opts o;
    dlock_client *client;
    dlock_report *report = NULL;
    size_t n;
    int rc = cli_parse_command(&cli_commands[CLI_CMD_DOCTOR], argc, argv, &o);
    if (rc)
        return rc == CLI_HELP ? EXIT_DONE : rc;
    /* Every server given, even those a lock client refuses: that is a finding */
    if ((rc = cli_open_inspector(cli, &o, &client)))
        return rc;
    rc = dlock_doctor(&report, client, o.name, o.wait.ttl_ms);
    if (rc < 0) {
        rc = cli_fail(client, rc, "doctor");
        dlock_client_close(client);
        return rc;
    }
    n = dlock_report_count(report);
    if (o.json)
        printf("{\"findings\":[");
    for (size_t i = 0; i < n; i++) {
        if (o.json)
            print_json(dlock_report_finding(report, i), i);
        else
            print_text(dlock_report_finding(report, i));
    }
    if (o.json)
        printf("]}\n");
    else if (n == 0)
        printf("no findings: these servers can keep a lock\n");
    rc = exit_code_of(report);
    dlock_report_free(report);
    dlock_client_close(client);
    return rc;
}

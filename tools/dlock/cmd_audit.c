/* audit: who held a name, when, and what went wrong. The library reads and
 * judges the audit streams (dlock_audit_read); this prints, as text, JSON
 * or an SVG timeline (audit_svg.c). */
#include "cli.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static const char *const kind_names[] = {"", "overlap", "fence-back", "past-validity",
                                         "no-majority"};
static const char *const end_names[] = {"open", "released", "expired", "lost"};

/* "2026-12-01T21:10:03.123456Z" */
static void format_us(int64_t us, char *out, size_t len)
{
    char secs[32];
    cli_format_time(us / 1000, secs, sizeof(secs));
    secs[strlen(secs) - 1] = '\0'; /* the Z comes after the fraction */
    snprintf(out, len, "%s.%06" PRId64 "Z", secs, us % 1000000);
}

static void describe_hold(const dlock_audit_hold *h, char *out, size_t len)
{
    snprintf(out, len, "%.8s (%s pid %ld, fence %" PRIu64 ")", h->token,
             h->host[0] ? h->host : "?", h->pid, h->fence);
}

static void print_finding(const dlock_audit_finding *f, const dlock_audit_hold *holds)
{
    char at[40], a[320], b[320];
    format_us(f->at_us, at, sizeof(at));
    describe_hold(&holds[f->a], a, sizeof(a));
    describe_hold(&holds[f->b], b, sizeof(b));
    switch (f->kind) {
    case DLOCK_AUDIT_OVERLAP:
        printf("%-13s %s  %s granted %.1f ms before %s ended\n", kind_names[f->kind], at, b,
               (double)f->amount_us / 1000, a);
        break;
    case DLOCK_AUDIT_FENCE_BACK:
        printf("%-13s %s  %s got a fence %" PRId64 " below that of %s\n", kind_names[f->kind], at,
               b, f->amount_us, a);
        break;
    case DLOCK_AUDIT_PAST_VALIDITY:
        if (holds[f->a].valid_us && holds[f->a].end_us <= holds[f->a].valid_us)
            printf("%-13s %s  %s was released after its key had gone, %.1f ms before its "
                   "validity's end\n", kind_names[f->kind], at, a,
                   (double)(holds[f->a].valid_us - holds[f->a].end_us) / 1000);
        else if (holds[f->a].valid_us)
            printf("%-13s %s  %s ended %.1f ms after its validity\n", kind_names[f->kind], at,
                   a, (double)f->amount_us / 1000);
        else /* its grant is older than the entries read */
            printf("%-13s %s  %s was released after its key had expired\n",
                   kind_names[f->kind], at, a);
        break;
    case DLOCK_AUDIT_NO_MAJORITY:
        printf("%-13s %s  %s was used, but only %u server(s) recorded its grant\n",
               kind_names[f->kind], at, a, holds[f->a].servers);
        break;
    }
}

static void print_json(const char *name, const dlock_audit *audit)
{
    const dlock_audit_hold *h;
    const dlock_audit_finding *f;
    size_t n_holds = dlock_audit_holds(audit, &h), n_findings = dlock_audit_findings(audit, &f);
    printf("{\"name\":");
    cli_print_json_string(name);
    printf(",\"entries\":%zu,\"holds\":[", dlock_audit_entries(audit));
    for (size_t i = 0; i < n_holds; i++) {
        printf("%s{\"token\":\"%s\",\"fence\":%" PRIu64 ",\"host\":", i ? "," : "", h[i].token,
               h[i].fence);
        cli_print_json_string(h[i].host);
        printf(",\"pid\":%ld,\"exclusive\":%s,\"start_us\":%" PRId64 ",\"valid_us\":%" PRId64
               ",\"end_us\":%" PRId64 ",\"end\":\"%s\",\"servers\":%u,\"ttl_ms\":%d}",
               h[i].pid, h[i].exclusive ? "true" : "false", h[i].start_us, h[i].valid_us,
               h[i].end_us, end_names[h[i].end], h[i].servers, h[i].ttl_ms);
    }
    printf("],\"findings\":[");
    for (size_t i = 0; i < n_findings; i++)
        printf("%s{\"kind\":\"%s\",\"a\":%zu,\"b\":%zu,\"at_us\":%" PRId64
               ",\"amount_us\":%" PRId64 "}",
               i ? "," : "", kind_names[f[i].kind], f[i].a, f[i].b, f[i].at_us, f[i].amount_us);
    printf("]}\n");
}

static void print_text(const char *name, const dlock_audit *audit)
{
    const dlock_audit_hold *h;
    const dlock_audit_finding *f;
    size_t n_holds = dlock_audit_holds(audit, &h), n_findings = dlock_audit_findings(audit, &f);
    printf("%s: %zu hold(s) in %zu entries; %zu finding(s)\n", name, n_holds,
           dlock_audit_entries(audit), n_findings);
    for (size_t i = 0; i < n_findings; i++)
        print_finding(&f[i], h);
}

int cmd_audit(struct cli *cli, int argc, char **argv)
{
    struct cli_command_opts o;
    dlock_client *client;
    dlock_audit *audit = NULL;
    const dlock_audit_finding *f;
    int rc = cli_parse_command(&cli_commands[CLI_CMD_AUDIT], argc, argv, &o);
    if (rc)
        return rc == CLI_HELP ? EXIT_DONE : rc;
    if ((rc = cli_open_client(cli, &client)))
        return rc;
    rc = dlock_audit_read(&audit, client, o.name, o.since_ms);
    if (rc < 0) {
        rc = cli_fail(client, rc, o.name);
        dlock_client_close(client);
        return rc;
    }
    if (o.json)
        print_json(o.name, audit);
    else
        print_text(o.name, audit);
    rc = dlock_audit_findings(audit, &f) ? EXIT_REFUSED : EXIT_DONE;
    /* A timeline that cannot be written is said; findings keep their 1. */
    if (o.svg && cli_write_audit_svg(audit, o.name, o.svg) < 0 && rc == EXIT_DONE)
        rc = EXIT_USAGE;
    dlock_audit_free(audit);
    dlock_client_close(client);
    return rc;
}

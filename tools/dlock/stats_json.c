/* run --stats-json FILE: the client's counters when dlock exits. */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static void write_nodes(FILE *f, dlock_client *client, const dlock_stats *s)
{
    fprintf(f, "\"nodes\":[");
    for (size_t i = 0; i < s->nodes; i++) {
        fprintf(f, "%s{\"server\":", i ? "," : "");
        cli_write_json_string(f, dlock_client_node_label(client, i));
        fprintf(f, ",\"errors\":%" PRIu64 ",\"timeouts\":%" PRIu64 "}", s->node[i].errors,
                s->node[i].timeouts);
    }
    fprintf(f, "]");
}

int cli_write_stats(dlock_client *client, const char *path)
{
    dlock_stats s = {.version = DLOCK_STATS_VERSION};
    FILE *f;
    if (dlock_client_stats(client, &s) < 0)
        return -1;
    if (!(f = fopen(path, "we"))) {
        cli_error("--stats-json %s: %s", path, strerror(errno));
        return -1;
    }
    fprintf(f,
            "{\"acquisitions\":%" PRIu64 ",\"busy\":%" PRIu64 ",\"waits\":%" PRIu64
            ",\"wait_ms\":%" PRId64 ",\"renewals\":%" PRIu64 ",\"min_renewal_margin_ms\":%" PRId64
            ",\"losses\":%" PRIu64 ",",
            s.acquisitions, s.busy, s.waits, s.wait_ms, s.renewals, s.min_renewal_margin_ms,
            s.losses);
    write_nodes(f, client, &s);
    fprintf(f, "}\n");
    if (fclose(f) != 0) {
        cli_error("--stats-json %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* Plain commands to one server. See probe.h. */
#include "probe.h"

#include "clock.h"
#include "read.h"
#include "route.h"

#include <stdio.h>
#include <string.h>

int dlock__probe(dlock_client *c, size_t node, int argc, const char *const *argv,
                 dlock__reply **out, char *why, size_t why_len)
{
    return dlock__probe_slot(c, node, -1, argc, argv, out, why, why_len);
}

int dlock__probe_slot(dlock_client *c, size_t node, int slot, int argc, const char *const *argv,
                      dlock__reply **out, char *why, size_t why_len)
{
    dlock__read rd = {.conns = &c->main.conns[node], .n = 1,
                      .deadline_ns = dlock__now_ns() + c->command_timeout_ms * DLOCK__NS_PER_MS};
    int rc = dlock__read_command(&rd, slot, argc, argv);
    if (rc == 0 && rd.parts[0] < 0) {
        rc = rd.parts[0];
        snprintf(why, why_len, "%s", rd.conns[0].err[0] ? rd.conns[0].err : dlock_strerror(rc));
    } else if (rc == 0) {
        *out = rd.results[0].reply; /* the caller's now */
        rd.results[0].reply = NULL;
    } else {
        snprintf(why, why_len, "%s", dlock_strerror(rc));
    }
    dlock__read_clear(&rd);
    return rc;
}

size_t dlock__probe_masters(dlock_client *c, size_t node, int *slots, size_t max)
{
    dlock__conn *conn = &c->main.conns[node];
    int64_t deadline = dlock__now_ns() + c->command_timeout_ms * DLOCK__NS_PER_MS;
    /* Any key will do: the answer is whether the server has slots at all. */
    if (dlock__route_probe_cluster(conn, "dlock", deadline) <= 0)
        return 0;
    return dlock__route_master_slots(conn, slots, max);
}

const char *dlock__probe_label(const dlock_client *c, size_t node)
{
    return c->main.conns[node].ep->label;
}

void dlock__info_field(const char *info, const char *field, char *out, size_t len)
{
    size_t flen = strlen(field);
    const char *at = info;
    out[0] = '\0';
    while ((at = strstr(at, field)) != NULL) {
        if ((at == info || at[-1] == '\n') && at[flen] == ':') {
            snprintf(out, len, "%.*s", (int)strcspn(at + flen + 1, "\r\n"), at + flen + 1);
            return;
        }
        at += flen;
    }
}

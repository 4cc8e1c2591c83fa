/* dlock_status_watch: the status of a name, each time it changes. Releases
 * are published on the name's channel and seen at once; acquisitions
 * publish nothing (that would cost every acquire a command) and expiries
 * cannot, so they are seen by looking again every period. */
#include "lane.h"
#include "names.h"
#include "wait.h"

#include <stdbool.h>
#include <string.h>

struct watch {
    dlock_client *c;
    const char *name;
    const dlock_status *prev;
    dlock_status *now;
};

static bool same_holder(const dlock_holder *a, const dlock_holder *b)
{
    if (!a || !b)
        return a == b;
    return a->pid == b->pid && a->since_ms == b->since_ms && strcmp(a->host, b->host) == 0;
}

/* Held or free, a new acquisition (every one draws a new fence) or a
 * holder of another client (the same fence, another record). */
static bool differs(const dlock_status *a, const dlock_status *b)
{
    return dlock_status_held(a) != dlock_status_held(b) ||
           dlock_status_fence(a) != dlock_status_fence(b) ||
           !same_holder(dlock_status_holder(a, 0), dlock_status_holder(b, 0));
}

static int look(void *ctx)
{
    struct watch *w = ctx;
    dlock_status *st = NULL;
    int rc = dlock_status_query(&st, w->c, w->name);
    if (rc < 0)
        return rc;
    if (!w->prev || differs(w->prev, st)) {
        w->now = st;
        return 1;
    }
    dlock_status_free(st);
    return 0;
}

int dlock_status_watch(dlock_status **out, dlock_client *c, const char *name,
                       const dlock_status *prev, int64_t period_ms)
{
    struct watch w = {c, name, prev, NULL};
    dlock__keys keys;
    char why[256];
    int rc = dlock__call_start(c, out);
    if (rc < 0)
        return rc;
    if (period_ms < 0 || period_ms > DLOCK_DURATION_MAX_MS) {
        dlock__set_error(&c->main, "period_ms must be from 0 to DLOCK_DURATION_MAX_MS");
        return DLOCK_EINVAL;
    }
    if ((rc = dlock__keys_make(&keys, name, why, sizeof(why))) < 0) {
        dlock__set_error(&c->main, "%s", why);
        return rc;
    }
    if (!prev) /* nothing to wait for: no subscription either */
        rc = look(&w);
    else
        rc = dlock__listen(c, keys.channel, period_ms ? period_ms : DLOCK_WATCH_PERIOD_MS, look,
                           &w);
    dlock__keys_clear(&keys);
    if (rc < 0) {
        if (rc == DLOCK_ECANCELED)
            dlock__set_error(&c->main, "the watch was canceled");
        return rc;
    }
    *out = w.now;
    return 0;
}

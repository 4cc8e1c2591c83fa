/* dlock_client_metrics: the client's counters as Prometheus text (the
 * exposition format 0.0.4): each family's HELP and TYPE, then its samples,
 * per lock name and per server. Numbers are written as integers or fixed
 * point by hand, never with %f or %g: those follow the caller's locale. */
#include "lane.h"
#include "text.h"

#include <inttypes.h>
#include <stdlib.h>

#define NS_PER_S UINT64_C(1000000000)

/* A per-name counter: its family name, its help, and where it is. */
struct name_counter {
    const char *family, *help;
    size_t offset; /* of its atomic_uint_fast64_t in dlock__name_metrics */
};

static const struct name_counter name_counters[] = {
    {"dlock_acquisitions_total", "Acquire calls that got the lock.",
     offsetof(dlock__name_metrics, acquisitions)},
    {"dlock_busy_total", "Acquire calls that ended busy: held by another owner until they gave up.",
     offsetof(dlock__name_metrics, busy)},
    {"dlock_waits_total", "Acquire calls that found the lock busy and waited for it.",
     offsetof(dlock__name_metrics, waits)},
    {"dlock_losses_total", "Auto-renewed locks lost before their release.",
     offsetof(dlock__name_metrics, losses)},
    {"dlock_renewals_total", "Automatic renewals that succeeded.",
     offsetof(dlock__name_metrics, renewals)},
    {"dlock_renewal_failures_total",
     "Automatic renewals that failed (the lock may still be renewed in time).",
     offsetof(dlock__name_metrics, renewal_failures)},
    {"dlock_handovers_total", "Locks and semaphore permits a release handed to this client's waiter.",
     offsetof(dlock__name_metrics, handovers)},
};

static void header(dlock__text *t, const char *family, const char *type, const char *help)
{
    dlock__text_printf(t, "# HELP %s %s\n# TYPE %s %s\n", family, help, family, type);
}

/* `family_suffix{label="value"` without the closing brace: a histogram's
 * bucket adds its `le`. */
static void open_sample(dlock__text *t, const char *family, const char *suffix, const char *label,
                        const char *value)
{
    dlock__text_printf(t, "%s%s{%s=\"", family, suffix, label);
    dlock__text_label_value(t, value);
    dlock__text_printf(t, "\"");
}

/* A duration in seconds, to the nanosecond. */
static void seconds(dlock__text *t, int64_t ns)
{
    uint64_t mag = ns < 0 ? -(uint64_t)ns : (uint64_t)ns;
    dlock__text_printf(t, "%s%" PRIu64 ".%09" PRIu64, ns < 0 ? "-" : "", mag / NS_PER_S,
                       mag % NS_PER_S);
}

static void counters(dlock__text *t, const dlock__metrics *m, const struct name_counter *c)
{
    header(t, c->family, "counter", c->help);
    for (size_t i = 0; i < dlock__metrics_count(m); i++) {
        const dlock__name_metrics *e = dlock__metrics_at(m, i);
        const atomic_uint_fast64_t *v = (const void *)((const char *)e + c->offset);
        open_sample(t, c->family, "", "name", e->name);
        dlock__text_printf(t, "} %" PRIuFAST64 "\n", atomic_load(v));
    }
}

/* Buckets are cumulative and the count is the +Inf bucket, summed from
 * one read of each bucket: they agree even while observations go on. */
static void histogram(dlock__text *t, const char *family, const char *name,
                      const dlock__histogram *h)
{
    uint_fast64_t total = 0;
    for (size_t b = 0; b <= DLOCK__BOUNDS; b++) {
        total += atomic_load(&h->count[b]);
        open_sample(t, family, "_bucket", "name", name);
        dlock__text_printf(t, ",le=\"%s\"} %" PRIuFAST64 "\n",
                           b < DLOCK__BOUNDS ? dlock__bucket_text[b] : "+Inf", total);
    }
    open_sample(t, family, "_sum", "name", name);
    dlock__text_printf(t, "} ");
    seconds(t, atomic_load(&h->sum_ns));
    dlock__text_printf(t, "\n");
    open_sample(t, family, "_count", "name", name);
    dlock__text_printf(t, "} %" PRIuFAST64 "\n", total);
}

static void histograms(dlock__text *t, const dlock__metrics *m)
{
    header(t, "dlock_wait_seconds", "histogram",
           "Time acquire calls took until they got the lock or ended busy, trying once or waiting.");
    for (size_t i = 0; i < dlock__metrics_count(m); i++) {
        const dlock__name_metrics *e = dlock__metrics_at(m, i);
        histogram(t, "dlock_wait_seconds", e->name, &e->wait);
    }
    header(t, "dlock_hold_seconds", "histogram",
           "Time locks were held: from the acquisition to the release, or to the loss.");
    for (size_t i = 0; i < dlock__metrics_count(m); i++) {
        const dlock__name_metrics *e = dlock__metrics_at(m, i);
        histogram(t, "dlock_hold_seconds", e->name, &e->hold);
    }
}

static void margins(dlock__text *t, const dlock__metrics *m)
{
    header(t, "dlock_renewal_margin_min_seconds", "gauge",
           "The least validity left when an automatic renewal succeeded.");
    for (size_t i = 0; i < dlock__metrics_count(m); i++) {
        const dlock__name_metrics *e = dlock__metrics_at(m, i);
        int64_t least = atomic_load(&e->min_margin_ms);
        if (least == INT64_MAX)
            continue; /* no renewal yet: no value */
        open_sample(t, "dlock_renewal_margin_min_seconds", "", "name", e->name);
        dlock__text_printf(t, "} ");
        seconds(t, least * 1000000);
        dlock__text_printf(t, "\n");
    }
}

/* A per-server counter: one sample per server, labelled as
 * dlock_client_node_label() (never with a password). */
static void server_counter(dlock__text *t, const dlock_client *c, const char *family,
                           const char *help, size_t offset)
{
    header(t, family, "counter", help);
    for (size_t i = 0; i < c->n; i++) {
        const atomic_uint_fast64_t *v = (const void *)((const char *)&c->node_counters[i] + offset);
        open_sample(t, family, "", "server", c->endpoints[i].label);
        dlock__text_printf(t, "} %" PRIuFAST64 "\n", atomic_load(v));
    }
}

int64_t dlock_client_metrics(const dlock_client *c, char *buf, size_t len)
{
    dlock__text t;
    if (!c || (!buf && len))
        return DLOCK_EINVAL;
    dlock__text_init(&t, buf, len);
    dlock__metrics_lock(&c->metrics);
    for (size_t i = 0; i < sizeof(name_counters) / sizeof(name_counters[0]); i++)
        counters(&t, &c->metrics, &name_counters[i]);
    histograms(&t, &c->metrics);
    margins(&t, &c->metrics);
    dlock__metrics_unlock(&c->metrics);
    server_counter(&t, c, "dlock_server_errors_total",
                   "Calls to a server that failed: error replies, broken connections.",
                   offsetof(dlock__node_counters, errors));
    server_counter(&t, c, "dlock_server_timeouts_total",
                   "Calls to a server that had no reply by their deadline.",
                   offsetof(dlock__node_counters, timeouts));
    return (int64_t)t.needed;
}

int dlock_client_metrics_text(char **out, const dlock_client *c)
{
    size_t len = 4096;
    if (!out || !c)
        return DLOCK_EINVAL;
    for (;;) {
        char *buf = malloc(len);
        int64_t needed;
        if (!buf)
            return DLOCK_ENOMEM;
        needed = dlock_client_metrics(c, buf, len);
        if ((uint64_t)needed < len) {
            *out = buf;
            return 0;
        }
        free(buf);
        len = (size_t)needed + 1024; /* room for what may come meanwhile */
    }
}

void dlock_metrics_free(char *text)
{
    free(text);
}

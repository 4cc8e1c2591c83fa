/* The client API: options, endpoints, opening and closing, cancelling a
 * wait. */
#include "book.h"
#include "clock.h"
#include "lane.h"
#include "kinds.h"
#include "renew.h"
#include "route.h"
#include "tls.h"
#include "token.h"
#include "wipe.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <unistd.h>

#define DEFAULT_URL "redis://127.0.0.1:6379"
#define DEFAULT_CONNECT_TIMEOUT_MS 2000
#define DEFAULT_COMMAND_TIMEOUT_MS 1000
#define DEFAULT_FENCE_TTL_MS (24LL * 3600 * 1000)
#define DEFAULT_DRIFT_FACTOR 0.01

const char *dlock_version(void)
{
    return DLOCK_VERSION_STRING;
}

int dlock_client_options_init(dlock_client_options *opts, unsigned version)
{
    if (!opts || version != DLOCK_CLIENT_OPTIONS_VERSION)
        return DLOCK_EINVAL;
    memset(opts, 0, sizeof(*opts));
    opts->version = version;
    return 0;
}

static int refuse(char *why, size_t why_len, const char *text)
{
    if (why && why_len)
        snprintf(why, why_len, "%s", text);
    return DLOCK_EINVAL;
}

static int nomem(char *why, size_t why_len)
{
    if (why && why_len)
        snprintf(why, why_len, "out of memory");
    return DLOCK_ENOMEM;
}

static const char two_servers[] =
    "two servers cannot form a useful majority (it takes both): use 1, or 3 or more "
    "independent servers";

static int check_options(const dlock_client_options *o, char *why, size_t why_len)
{
    if (o->version != DLOCK_CLIENT_OPTIONS_VERSION)
        return refuse(why, why_len, "unknown options version");
    if (o->n_urls == 2 && !o->inspect)
        return refuse(why, why_len, two_servers);
    if (o->n_urls > DLOCK_NODES_MAX)
        return refuse(why, why_len, "too many servers (at most 15)");
    if (o->n_urls && !o->urls)
        return refuse(why, why_len, "n_urls is set but urls is NULL");
    if (!dlock__duration_ok(o->connect_timeout_ms) || !dlock__duration_ok(o->command_timeout_ms) ||
        !dlock__duration_ok(o->node_timeout_ms) || o->fence_ttl_ms < 0 ||
        o->fence_ttl_ms > DLOCK_TTL_MAX_MS)
        return refuse(why, why_len, "timeouts and TTLs must not be negative or too large");
    if (isnan(o->drift_factor) || o->drift_factor < 0 || o->drift_factor >= 0.5)
        return refuse(why, why_len, "drift_factor must be at least 0 and below 0.5");
    if (o->replicas < 0 || o->replicas > DLOCK_REPLICAS_MAX)
        return refuse(why, why_len, "replicas must be from 0 to 1000");
    if (!dlock__duration_ok(o->restart_delay_ms))
        return refuse(why, why_len, "restart_delay_ms must not be negative or too large");
    if (o->metrics_names_max > DLOCK_METRICS_NAMES_MAX)
        return refuse(why, why_len, "metrics_names_max must be at most 100000");
    if (o->audit_maxlen > DLOCK_AUDIT_MAXLEN_MAX)
        return refuse(why, why_len, "audit_maxlen must be at most 10000000");
    return 0;
}

static int replace_secret(char **field, const char *value)
{
    char *copy;
    if (!value)
        return 0;
    copy = strdup(value);
    if (!copy)
        return DLOCK_ENOMEM;
    if (*field) {
        dlock__wipe(*field, strlen(*field));
        free(*field);
    }
    *field = copy;
    return 0;
}

static bool same_address(const struct addrinfo *a, const struct addrinfo *b)
{
    for (; a; a = a->ai_next)
        for (const struct addrinfo *x = b; x; x = x->ai_next)
            if (a->ai_addrlen == x->ai_addrlen && memcmp(a->ai_addr, x->ai_addr, a->ai_addrlen) == 0)
                return true;
    return false;
}

/* Two endpoints that are one server would be counted as two votes: refuse
 * them by spelling, by database (/0 and /1 are one server) and by any
 * address they resolve to. At connect, servers that share a run_id are
 * caught too (dlock__lane_check_distinct). An inspecting client keeps the
 * first such pair as its refusal of locks, for the doctor to report. */
static int refuse_same_server(dlock_client *c, size_t k, bool inspect, char *why, size_t why_len)
{
    const dlock__endpoint *ep = &c->endpoints[k];
    for (size_t i = 0; i < k && !c->refusal[0]; i++) {
        const dlock__endpoint *other = &c->endpoints[i];
        /* Sentinels may watch several primaries: their address says nothing. */
        bool same = strcmp(other->label, ep->label) == 0 ||
                    (!ep->service && !other->service && same_address(c->addrs[i], c->addrs[k]));
        if (!same)
            continue;
        if (other->db != ep->db) /* the labels leave it out: /0 and /1 would read alike */
            snprintf(c->refusal, sizeof(c->refusal), "servers %s/%d and %s/%d are one server "
                     "(two databases are not two votes)", other->label, other->db, ep->label,
                     ep->db);
        else
            snprintf(c->refusal, sizeof(c->refusal), "servers %s and %s are one server: each "
                     "Redlock vote must be an independent server", other->label, ep->label);
        c->refusal_id = "SAME_NODE";
        return inspect ? 0 : refuse(why, why_len, c->refusal);
    }
    return 0;
}

static int add_endpoint(dlock_client *c, const char *url, const dlock_client_options *o,
                        char *why, size_t why_len)
{
    dlock__endpoint *ep = &c->endpoints[c->n];
    char reason[256];
    int rc = dlock__url_parse(ep, url, reason, sizeof(reason));
    if (rc < 0) {
        if (why && why_len)
            snprintf(why, why_len, "bad server URL: %s", reason);
        return rc;
    }
    c->n++;
    if (replace_secret(&ep->user, o->user) < 0 || replace_secret(&ep->password, o->password) < 0)
        return nomem(why, why_len);
    if (ep->user && !ep->password)
        return refuse(why, why_len, "a user needs a password (in the URL or the options)");
    ep->tls |= o->tls;
    if (ep->tls && ep->transport == DLOCK__UNIX)
        return refuse(why, why_len, "TLS over a Unix socket is not supported");
    rc = dlock__resolve(ep, &c->addrs[c->n - 1], reason, sizeof(reason));
    if (rc < 0 && why && why_len)
        snprintf(why, why_len, "%s", reason);
    return rc < 0 ? rc : refuse_same_server(c, c->n - 1, o->inspect, why, why_len);
}

/* One OpenSSL context for the client, if any server speaks TLS. */
static int set_up_tls(dlock_client *c, const dlock_client_options *o, char *why, size_t why_len)
{
    char reason[256];
    bool any = false;
    int rc;
    for (size_t i = 0; i < c->n; i++)
        any |= c->endpoints[i].tls;
    if (!any)
        return 0;
    if (o->tls_sni && !(c->tls_name = strdup(o->tls_sni)))
        return nomem(why, why_len);
    rc = dlock__tls_context_new(&c->tls_ctx, o, reason, sizeof(reason));
    if (rc < 0 && why && why_len)
        snprintf(why, why_len, "%s", rc == DLOCK_ENOMEM ? "out of memory" : reason);
    return rc;
}

static int open_connections(dlock_client *c, char *why, size_t why_len)
{
    uint64_t seed = 0;
    if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != (ssize_t)sizeof(seed))
        seed = (uint64_t)dlock__now_ns() ^ (uint64_t)getpid();
    c->rng = seed | 1;
    c->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (c->cancel_fd < 0) {
        if (why && why_len)
            snprintf(why, why_len, "eventfd: %s", strerror(errno));
        return DLOCK_ESYSTEM;
    }
    c->tokens = dlock__token_pool_new();
    c->scripts = dlock__kinds_scripts();
    for (size_t i = 0; i < c->n; i++)
        if (!(c->books[i] = dlock__book_new()))
            return nomem(why, why_len);
    if (dlock__lane_init(c, &c->main) < 0 || dlock__subscribers_init(c) < 0)
        return nomem(why, why_len);
    return 0;
}

int dlock_client_open(dlock_client **out, const dlock_client_options *opts, char *why,
                      size_t why_len)
{
    static const dlock_client_options defaults = DLOCK_CLIENT_OPTIONS_INIT;
    const dlock_client_options *o = opts ? opts : &defaults;
    dlock_client *c;
    int rc;

    if (why && why_len)
        why[0] = '\0';
    if (!out)
        return refuse(why, why_len, "out is NULL");
    rc = check_options(o, why, why_len);
    if (rc < 0)
        return rc;
    c = calloc(1, sizeof(*c));
    if (!c)
        return nomem(why, why_len);
    c->cancel_fd = -1;
    dlock__stats_init(&c->stats);
    if (dlock__metrics_init(&c->metrics, o->metrics_names_max ? o->metrics_names_max
                                                              : DLOCK_METRICS_NAMES_DEFAULT) < 0) {
        free(c);
        return nomem(why, why_len);
    }
    c->connect_timeout_ms = o->connect_timeout_ms ? o->connect_timeout_ms
                                                  : DEFAULT_CONNECT_TIMEOUT_MS;
    c->command_timeout_ms = o->command_timeout_ms ? o->command_timeout_ms
                                                  : DEFAULT_COMMAND_TIMEOUT_MS;
    c->node_timeout_ms = o->node_timeout_ms;
    c->fence_ttl_ms = o->fence_ttl_ms ? o->fence_ttl_ms : DEFAULT_FENCE_TTL_MS;
    c->drift_factor = o->drift_factor > 0 ? o->drift_factor : DEFAULT_DRIFT_FACTOR;
    c->replicas = o->replicas;
    c->restart_delay_ms = o->restart_delay_ms;
    c->audit = o->audit != 0;
    c->audit_maxlen = o->audit_maxlen ? o->audit_maxlen : DLOCK_AUDIT_MAXLEN_DEFAULT;
    if (gethostname(c->host, sizeof(c->host) - 1) < 0)
        snprintf(c->host, sizeof(c->host), "unknown");
    for (size_t i = 0; rc == 0 && i < (o->n_urls ? o->n_urls : 1); i++) {
        rc = add_endpoint(c, o->n_urls ? o->urls[i] : DEFAULT_URL, o, why, why_len);
    }
    if (rc == 0 && c->n == 2 && !c->refusal[0]) { /* only an inspecting client gets here */
        snprintf(c->refusal, sizeof(c->refusal), "%s", two_servers);
        c->refusal_id = "TWO_SERVERS";
    }
    if (rc == 0)
        rc = set_up_tls(c, o, why, why_len);
    if (rc == 0)
        rc = open_connections(c, why, why_len);
    if (rc < 0) {
        dlock_client_close(c);
        return rc;
    }
    *out = c;
    return 0;
}

void dlock_client_close(dlock_client *c)
{
    if (!c)
        return;
    dlock__renew_stop(c);
    dlock__lane_destroy(c, &c->main);
    for (size_t i = 0; i < c->n; i++) {
        dlock__route_free(&c->subs[i]);
        dlock__conn_destroy(&c->subs[i]);
        if (c->addrs[i])
            freeaddrinfo(c->addrs[i]);
        dlock__book_free(c->books[i]);
        dlock__endpoint_clear(&c->endpoints[i]);
    }
    if (c->cancel_fd >= 0)
        close(c->cancel_fd);
    dlock__token_pool_free(c->tokens);
    dlock__tls_context_free(c->tls_ctx);
    free(c->tls_name);
    free(c->kept_channel);
    dlock__metrics_destroy(&c->metrics);
    free(c);
}

/* An atomic store and a write(2) only: safe in a signal handler. A wait
 * (wait.c) checks the flag before each try and polls the descriptor while
 * it sleeps. */
void dlock_client_cancel(dlock_client *c)
{
    uint64_t one = 1;
    if (!c)
        return;
    atomic_store(&c->cancel_requested, true);
    (void)!write(c->cancel_fd, &one, sizeof(one));
}

const char *dlock_client_errmsg(const dlock_client *c)
{
    return c ? c->main.errmsg : "no client";
}

size_t dlock_client_nodes(const dlock_client *c)
{
    return c ? c->n : 0;
}

const char *dlock_client_node_label(const dlock_client *c, size_t node)
{
    return c && node < c->n ? c->endpoints[node].label : "";
}


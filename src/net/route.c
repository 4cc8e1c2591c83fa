/* Routing to a cluster's masters and to a sentinel-named primary. See
 * route.h. */
#include "route.h"

#include "book.h"
#include "clock.h"
#include "dlock.h"
#include "slot.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REFRESH_MIN_NS (100 * DLOCK__NS_PER_MS) /* CLUSTER SLOTS at most this often */
#define RETRY_PAUSE_MS 20                       /* after TRYAGAIN or CLUSTERDOWN */
#define SENTINELS_MAX 8
/* A sentinel failover leaves the old primary a primary until the sentinels
 * reconfigure it (they look every 10 s): a connection to it asks the
 * sentinels again this often, so a lock is not taken on a demoted server. */
#define SENTINEL_RECHECK_NS (1000 * DLOCK__NS_PER_MS)
#define HOST_MAX 256

/* A cluster node: the seed (the URL's endpoint) or one learnt from it. */
struct node {
    const dlock__endpoint *ep; /* the seed's, or `own` */
    dlock__endpoint own;
    struct addrinfo *addrs; /* NULL for the seed: the client's */
    dlock__conn conn;       /* parked here while another node's is the caller's */
    bool in_use;
};

struct sentinel {
    dlock__endpoint ep;
    struct addrinfo *addrs;
    dlock__conn conn; /* out == NULL until first used */
};

struct dlock__router {
    bool cluster; /* else a sentinel-named primary */
    const dlock__endpoint *seed;
    const struct addrinfo *seed_addrs;
    /* Cluster. nodes[active].conn is an empty placeholder: the active
     * node's connection is the caller's. */
    struct node nodes[DLOCK__ROUTE_NODES_MAX]; /* [0]: the seed */
    size_t active, evict_next;
    int64_t refreshed_ns;
    bool refresh_due; /* a MOVED came: load the whole map before the next call */
    unsigned reroutes; /* calls sent again elsewhere, ever (dlock__route_reroutes) */
    uint8_t owner[DLOCK__SLOTS]; /* node index + 1; 0: unknown, ask the active node */
    /* Sentinel. */
    dlock__endpoint primary; /* host NULL until the sentinels named one */
    struct addrinfo *primary_addrs;
    int64_t asked_ns; /* when the sentinels last named it */
    struct sentinel sentinels[SENTINELS_MAX];
    size_t n_sentinels;
    struct ssl_ctx_st *tls_ctx; /* the endpoint's connection's, for the sentinels */
    const char *tls_name;
    int64_t connect_timeout_ms;
};

static bool starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

bool dlock__route_pause(int64_t deadline_ns)
{
    struct timespec ts = {0, RETRY_PAUSE_MS * 1000000L};
    /* The call sent after it needs time too: a reply, not a time-out, is
     * what tells why the call was not served. */
    if ((deadline_ns - dlock__now_ns()) / DLOCK__NS_PER_MS <= 3LL * RETRY_PAUSE_MS)
        return false;
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
    return true;
}

/* One command and its reply on `conn`, waiting no later than `deadline_ns`. */
static int roundtrip(dlock__conn *conn, int argc, const char **argv, int64_t deadline_ns,
                     dlock__reply **out)
{
    size_t lens[4];
    char *cmd;
    long long len;
    int rc;

    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    len = dlock__command_format(&cmd, argc, argv, lens);
    if (len < 0)
        return (int)len;
    rc = dlock__conn_begin(conn, cmd, (size_t)len, dlock__now_ns());
    if (rc == 0)
        rc = dlock__conn_send(conn);
    dlock__command_free(cmd);
    while (rc == 0) {
        int64_t now = dlock__now_ns();
        struct pollfd pfd = {.fd = conn->fd, .events = dlock__conn_events(conn)};
        if (now >= deadline_ns) {
            dlock__conn_abandon(conn, 1);
            snprintf(conn->err, sizeof(conn->err), "%s: no reply to %s in time", conn->ep->label,
                     argv[0]);
            return DLOCK_ETIMEDOUT;
        }
        if (poll(&pfd, 1, dlock__ms_until(deadline_ns, now)) < 0 && errno != EINTR)
            return DLOCK_ESYSTEM;
        rc = dlock__conn_progress(conn, pfd.revents, out);
    }
    return rc < 0 ? rc : 0;
}

/* A connection like `model` (TLS, scripts, identity, push mode, router) to
 * another server. */
static int conn_like(dlock__conn *out, const dlock__conn *model, const dlock__endpoint *ep,
                     const struct addrinfo *addrs)
{
    if (dlock__conn_init(out, ep, addrs, model->connect_timeout_ms) < 0)
        return DLOCK_ENOMEM;
    out->preload = model->preload;
    out->ask_identity = model->ask_identity;
    out->back_off_reconnects = model->back_off_reconnects;
    out->push_mode = model->push_mode;
    out->tls_ctx = model->tls_ctx;
    out->tls_name = model->tls_name;
    out->router = model->router;
    out->book = model->book;
    return 0;
}

static struct dlock__router *router_new(dlock__conn *conn, bool cluster)
{
    struct dlock__router *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->cluster = cluster;
    r->seed = conn->ep;
    r->seed_addrs = conn->addrs;
    r->nodes[0].ep = conn->ep;
    r->nodes[0].in_use = true;
    r->nodes[0].conn.fd = -1;
    conn->router = r;
    return r;
}

/* ---- Cluster ---------------------------------------------------------- */

static void swap_conns(dlock__conn *a, dlock__conn *b)
{
    dlock__conn t = *a;
    *a = *b;
    *b = t;
}

/* Makes node m's connection the caller's, parking the active one. A
 * subscriber's is closed instead: what it listened to is no longer there. */
static void switch_to(dlock__conn *conn, struct dlock__router *r, size_t m)
{
    if (m == r->active)
        return;
    if (conn->push_mode)
        dlock__conn_close(conn);
    swap_conns(conn, &r->nodes[r->active].conn);
    swap_conns(conn, &r->nodes[m].conn);
    r->active = m;
}

static void forget_node(struct dlock__router *r, size_t i)
{
    struct node *nd = &r->nodes[i];
    dlock__conn_destroy(&nd->conn);
    dlock__endpoint_clear(&nd->own);
    if (nd->addrs)
        freeaddrinfo(nd->addrs);
    memset(nd, 0, sizeof(*nd));
    nd->conn.fd = -1;
    for (size_t s = 0; s < DLOCK__SLOTS; s++)
        if (r->owner[s] == i + 1)
            r->owner[s] = 0;
}

/* A free entry, or the next learnt node in turn that is not active. */
static size_t make_room(struct dlock__router *r)
{
    for (size_t i = 1; i < DLOCK__ROUTE_NODES_MAX; i++)
        if (!r->nodes[i].in_use)
            return i;
    do
        r->evict_next = r->evict_next % (DLOCK__ROUTE_NODES_MAX - 1) + 1;
    while (r->evict_next == r->active);
    forget_node(r, r->evict_next);
    return r->evict_next;
}

/* The index of the node at host:port the router talks to, or -1. */
static int find_node(const struct dlock__router *r, const char *host, const char *port)
{
    for (size_t i = 0; i < DLOCK__ROUTE_NODES_MAX; i++) {
        const struct node *nd = &r->nodes[i];
        if (nd->in_use && nd->ep->host && strcmp(nd->ep->host, host) == 0 &&
            strcmp(nd->ep->port, port) == 0)
            return (int)i;
    }
    return -1;
}

/* The node at host:port, learnt now if new. Returns its index or -1. */
static int node_at(dlock__conn *conn, struct dlock__router *r, const char *host, const char *port)
{
    char why[256];
    struct node *nd;
    size_t i;
    int known;
    if (!host)
        return -1; /* "" from a node reached over a Unix socket: no address to go to */
    if ((known = find_node(r, host, port)) >= 0)
        return known;
    i = make_room(r);
    nd = &r->nodes[i];
    if (dlock__endpoint_derive(&nd->own, r->seed, host, port, true) < 0)
        return -1;
    nd->ep = &nd->own;
    if (dlock__resolve(nd->ep, &nd->addrs, why, sizeof(why)) < 0 ||
        conn_like(&nd->conn, conn, nd->ep, nd->addrs) < 0) {
        forget_node(r, i);
        return -1;
    }
    nd->in_use = true;
    dlock__book_add(conn->book, host, port);
    return (int)i;
}

static bool is_integer(const dlock__reply *r, long long lo, long long hi)
{
    return r->type == DLOCK__REPLY_INTEGER && r->integer >= lo && r->integer <= hi;
}

/* A node's [host, port, ...] of CLUSTER SLOTS: its host (a node that does
 * not know its own address says "" or "?": it is the one we asked) and
 * port, or false. */
static bool node_address(const dlock__conn *conn, const dlock__reply *m, const char **host,
                         char *port)
{
    if (m->type != DLOCK__REPLY_ARRAY || m->elements < 2 ||
        m->element[0]->type != DLOCK__REPLY_STRING || !is_integer(m->element[1], 1, 65535))
        return false;
    *host = m->element[0]->len && strcmp(m->element[0]->str, "?") != 0 ? m->element[0]->str
                                                                        : conn->ep->host;
    snprintf(port, 8, "%lld", m->element[1]->integer);
    return *host != NULL;
}

/* One entry of CLUSTER SLOTS: start, end, master [host, port, ...],
 * replicas. The replicas are noted in the book: one of them is the master
 * after a failover. */
static void load_range(dlock__conn *conn, struct dlock__router *r, const dlock__reply *e)
{
    const char *host;
    char port[8];
    int node;
    if (e->type != DLOCK__REPLY_ARRAY || e->elements < 3 ||
        !is_integer(e->element[0], 0, DLOCK__SLOTS - 1) ||
        !is_integer(e->element[1], e->element[0]->integer, DLOCK__SLOTS - 1))
        return;
    for (size_t i = 3; i < e->elements; i++)
        if (node_address(conn, e->element[i], &host, port))
            dlock__book_add(conn->book, host, port);
    if (!node_address(conn, e->element[2], &host, port))
        return;
    node = node_at(conn, r, host, port);
    if (node >= 0)
        memset(&r->owner[e->element[0]->integer], node + 1,
               (size_t)(e->element[1]->integer - e->element[0]->integer + 1));
}

/* The whole slot map from the active node. Returns 0, or the failure to
 * reach it. A node that answers an error is reached: a user not allowed
 * CLUSTER SLOTS, or a map too large for the reader, still learns slot by
 * slot from MOVED. An empty map (a node out of the cluster, one that
 * started afresh) changes nothing and is no answer: ask another. */
static int load_map(dlock__conn *conn, struct dlock__router *r, int64_t deadline_ns)
{
    const char *argv[] = {"CLUSTER", "SLOTS"};
    dlock__reply *map = NULL;
    int rc = roundtrip(conn, 2, argv, deadline_ns, &map); /* map set only on success */
    if (map && map->type == DLOCK__REPLY_ARRAY && map->elements == 0) {
        snprintf(conn->err, sizeof(conn->err), "%s: the node knows no slot", conn->ep->label);
        rc = DLOCK_ECONN;
    } else if (map && map->type == DLOCK__REPLY_ARRAY) {
        memset(r->owner, 0, sizeof(r->owner));
        for (size_t i = 0; i < map->elements; i++)
            load_range(conn, r, map->element[i]);
    }
    dlock__reply_free(map);
    return rc;
}

/* The map from any node but `skip` (an index; DLOCK__ROUTE_NODES_MAX: none)
 * that answers: the active one, the others this router talks to, then
 * those the book names (another lane learnt them). *conn is left on the
 * node that answered. Returns 0 or the failure to reach any. */
static int load_map_anywhere(dlock__conn *conn, struct dlock__router *r, size_t skip,
                             int64_t deadline_ns)
{
    dlock__book_entry known[DLOCK__BOOK_MAX];
    size_t n_known;
    int rc = DLOCK_ECONN;
    if (r->active != skip && (rc = load_map(conn, r, deadline_ns)) == 0)
        return 0;
    for (size_t i = 0; i < DLOCK__ROUTE_NODES_MAX && dlock__now_ns() < deadline_ns; i++) {
        if (i == skip || i == r->active || !r->nodes[i].in_use)
            continue;
        switch_to(conn, r, i);
        if ((rc = load_map(conn, r, deadline_ns)) == 0)
            return 0;
    }
    n_known = dlock__book_read(conn->book, known, DLOCK__BOOK_MAX);
    for (size_t k = 0; k < n_known && dlock__now_ns() < deadline_ns; k++) {
        int node;
        if (find_node(r, known[k].host, known[k].port) >= 0)
            continue; /* asked above */
        node = node_at(conn, r, known[k].host, known[k].port);
        if (node < 0 || (size_t)node == skip)
            continue;
        switch_to(conn, r, (size_t)node);
        if ((rc = load_map(conn, r, deadline_ns)) == 0)
            return 0;
    }
    return rc;
}

/* The whole slot map, at most every REFRESH_MIN_NS. */
static void refresh(dlock__conn *conn, struct dlock__router *r, int64_t deadline_ns)
{
    int64_t now = dlock__now_ns();
    if (r->refreshed_ns && now - r->refreshed_ns < REFRESH_MIN_NS)
        return;
    r->refreshed_ns = now;
    load_map_anywhere(conn, r, DLOCK__ROUTE_NODES_MAX, deadline_ns);
}

/* "SLOT HOST:PORT" of a MOVED or ASK. Returns the node's index or -1. */
static int redirect_target(dlock__conn *conn, struct dlock__router *r, const char *text,
                           int *slot)
{
    char host[HOST_MAX], *end;
    const char *addr, *colon;
    long s = strtol(text, &end, 10);
    size_t host_len;
    if (end == text || *end != ' ' || s < 0 || s >= DLOCK__SLOTS)
        return -1;
    addr = end + 1;
    colon = strrchr(addr, ':');
    if (!colon || strlen(colon + 1) < 1 || strlen(colon + 1) > 5 ||
        strspn(colon + 1, "0123456789") != strlen(colon + 1))
        return -1;
    host_len = (size_t)(colon - addr);
    if (host_len >= sizeof(host))
        return -1;
    memcpy(host, addr, host_len);
    host[host_len] = '\0';
    *slot = (int)s;
    return node_at(conn, r, host_len ? host : conn->ep->host, colon + 1);
}

static struct dlock__router *cluster_router(dlock__conn *conn)
{
    if (conn->router)
        return conn->router->cluster ? conn->router : NULL;
    return router_new(conn, true);
}

/* The call goes again at once, to the node MOVED named; the whole map is
 * loaded before the next call (the connection is up by then): a first
 * redirect costs the call one round trip more, not two. */
static enum dlock__reroute follow_moved(dlock__conn *conn, const char *text)
{
    struct dlock__router *r = cluster_router(conn);
    int slot, node = r ? redirect_target(conn, r, text, &slot) : -1;
    if (node < 0)
        return DLOCK__ROUTE_DONE;
    r->owner[slot] = (uint8_t)(node + 1);
    r->refresh_due = true;
    switch_to(conn, r, (size_t)node);
    return DLOCK__ROUTE_AGAIN;
}

static enum dlock__reroute follow_ask(dlock__conn *conn, const char *text)
{
    struct dlock__router *r = cluster_router(conn);
    int slot, node = r ? redirect_target(conn, r, text, &slot) : -1;
    if (node < 0)
        return DLOCK__ROUTE_DONE;
    switch_to(conn, r, (size_t)node);
    return DLOCK__ROUTE_ASKING;
}

/* ---- Sentinel --------------------------------------------------------- */

/* Does "host[:port]" (host maybe "[v6]") name a port? */
static bool has_port(const char *item, size_t len)
{
    const char *close = memchr(item, ']', len);
    const char *from = close ? close : item;
    return memchr(from, ':', len - (size_t)(from - item)) != NULL;
}

static int add_sentinel(struct dlock__router *r, const char *item, size_t len)
{
    struct sentinel *s = &r->sentinels[r->n_sentinels];
    char url[HOST_MAX + 16], why[256];
    snprintf(url, sizeof(url), "redis://%.*s", (int)len, item);
    if (dlock__url_parse(&s->ep, url, why, sizeof(why)) < 0)
        return DLOCK_ENOMEM; /* the URL's parser checked it: only memory can fail */
    if (!has_port(item, len))
        memcpy(s->ep.port, "26379", 6);
    s->ep.tls = r->seed->tls;
    s->conn.fd = -1;
    r->n_sentinels++;
    return 0;
}

int dlock__route_attach_sentinel(dlock__conn *conn)
{
    const char *list = conn->ep->sentinels;
    struct dlock__router *r = router_new(conn, false);
    if (!r)
        return DLOCK_ENOMEM;
    r->tls_ctx = conn->tls_ctx;
    r->tls_name = conn->tls_name;
    r->connect_timeout_ms = conn->connect_timeout_ms;
    for (size_t at = 0; list[at] && r->n_sentinels < SENTINELS_MAX;) {
        size_t len = strcspn(list + at, ",");
        if (len > HOST_MAX || add_sentinel(r, list + at, len) < 0)
            return DLOCK_ENOMEM;
        at += len + (list[at + len] == ',');
    }
    return 0;
}

/* Sentinel s's connection, made on first use (resolving may take a while):
 * TLS like the endpoint's, no AUTH (sentinels rarely have it), no scripts. */
static dlock__conn *sentinel_conn(struct dlock__router *r, struct sentinel *s)
{
    char why[256];
    if (s->conn.out)
        return &s->conn;
    if (!s->addrs && dlock__resolve(&s->ep, &s->addrs, why, sizeof(why)) < 0) {
        snprintf(s->conn.err, sizeof(s->conn.err), "%s", why);
        return NULL;
    }
    if (dlock__conn_init(&s->conn, &s->ep, s->addrs, r->connect_timeout_ms) < 0)
        return NULL;
    s->conn.tls_ctx = r->tls_ctx;
    s->conn.tls_name = r->tls_name;
    return &s->conn;
}

/* The primary's address as the first sentinel that knows it says. */
static int ask_sentinels(dlock__conn *conn, struct dlock__router *r, int64_t deadline_ns,
                         char *host, char *port)
{
    const char *argv[] = {"SENTINEL", "get-master-addr-by-name", r->seed->service};
    const char *last = "no answer";
    for (size_t i = 0; i < r->n_sentinels; i++) {
        struct sentinel *s = &r->sentinels[i];
        dlock__conn *sc = sentinel_conn(r, s);
        dlock__reply *a = NULL;
        /* A quarter of the time left each: a silent sentinel must leave
         * the others, and the call, time of their own. */
        int64_t now = dlock__now_ns();
        int64_t until = deadline_ns > now ? now + (deadline_ns - now) / 4 : now;
        int rc = sc ? roundtrip(sc, 3, argv, until, &a) : DLOCK_ECONN;
        bool named = a && a->type == DLOCK__REPLY_ARRAY && a->elements == 2 &&
                     a->element[0]->type == DLOCK__REPLY_STRING && a->element[0]->len < HOST_MAX &&
                     a->element[1]->type == DLOCK__REPLY_STRING && a->element[1]->len <= 5;
        if (named) {
            memcpy(host, a->element[0]->str, a->element[0]->len + 1);
            memcpy(port, a->element[1]->str, a->element[1]->len + 1);
        } else {
            last = rc < 0 ? s->conn.err : "it does not know the name";
        }
        dlock__reply_free(a);
        if (named)
            return 0;
    }
    snprintf(conn->err, sizeof(conn->err), "%s: no sentinel named the primary (last: %.160s)",
             r->seed->label, last);
    return DLOCK_ECONN;
}

/* Points *conn at host:port, if that is not where it points. */
static int set_primary(dlock__conn *conn, struct dlock__router *r, const char *host,
                       const char *port)
{
    char why[256];
    if (r->primary.host && strcmp(r->primary.host, host) == 0 &&
        strcmp(r->primary.port, port) == 0)
        return 0;
    dlock__conn_close(conn);
    conn->ep = r->seed;
    conn->addrs = r->seed_addrs;
    conn->reconnect_at_ns = conn->reconnect_delay_ms = 0;
    dlock__endpoint_clear(&r->primary);
    if (r->primary_addrs)
        freeaddrinfo(r->primary_addrs);
    r->primary_addrs = NULL;
    if (dlock__endpoint_derive(&r->primary, r->seed, host, port, true) < 0)
        return DLOCK_ENOMEM;
    if (dlock__resolve(&r->primary, &r->primary_addrs, why, sizeof(why)) < 0) {
        snprintf(conn->err, sizeof(conn->err), "%.100s: %.150s", r->seed->label, why);
        dlock__endpoint_clear(&r->primary);
        return DLOCK_ECONN;
    }
    conn->ep = &r->primary;
    conn->addrs = r->primary_addrs;
    return 0;
}

/* ROLE says "master", or cannot say (a user without it: READONLY will). */
static int check_role(dlock__conn *conn, struct dlock__router *r, int64_t deadline_ns)
{
    const char *argv[] = {"ROLE"};
    dlock__reply *a = NULL;
    int rc = roundtrip(conn, 1, argv, deadline_ns, &a);
    if (a && a->type == DLOCK__REPLY_ARRAY && a->elements > 0 &&
        a->element[0]->type == DLOCK__REPLY_STRING && strcmp(a->element[0]->str, "master") != 0) {
        snprintf(conn->err, sizeof(conn->err), "%s: the sentinels' primary for %s is a %s now",
                 conn->ep->label, r->seed->service, a->element[0]->str);
        dlock__conn_close(conn); /* the next call asks the sentinels again */
        rc = DLOCK_ESERVER;
    }
    dlock__reply_free(a);
    return rc;
}

/* A new connection asks the sentinels first, one that is up at most every
 * SENTINEL_RECHECK_NS; a primary that ROLE shows is not one is left. When
 * no sentinel answers, the primary they named last stays the one: their
 * outage does not move it. */
static int sentinel_prepare(dlock__conn *conn, struct dlock__router *r, int64_t deadline_ns)
{
    char host[HOST_MAX], port[8];
    int64_t now = dlock__now_ns();
    int rc;
    if (conn->state != DLOCK__CONN_CLOSED && now - r->asked_ns < SENTINEL_RECHECK_NS)
        return 0;
    rc = ask_sentinels(conn, r, deadline_ns, host, port);
    r->asked_ns = now;
    if (rc == 0)
        rc = set_primary(conn, r, host, port);
    else if (r->primary.host)
        rc = 0;
    if (rc == 0 && conn->state == DLOCK__CONN_CLOSED && !conn->push_mode)
        rc = check_role(conn, r, deadline_ns);
    return rc;
}

/* After READONLY or a refused connect: the call goes again if the
 * sentinels name another primary now. */
static enum dlock__reroute sentinel_after(dlock__conn *conn, struct dlock__router *r,
                                          int64_t deadline_ns)
{
    char host[HOST_MAX], port[8];
    bool moved;
    dlock__conn_close(conn);
    if (ask_sentinels(conn, r, deadline_ns, host, port) < 0)
        return DLOCK__ROUTE_DONE;
    moved = !r->primary.host || strcmp(r->primary.host, host) != 0 ||
            strcmp(r->primary.port, port) != 0;
    if (!moved || set_primary(conn, r, host, port) < 0 ||
        (!conn->push_mode && check_role(conn, r, deadline_ns) < 0))
        return DLOCK__ROUTE_DONE;
    return DLOCK__ROUTE_AGAIN;
}

/* ---- Both ------------------------------------------------------------- */

/* A connection with no router yet, of an endpoint that another lane found
 * to be a cluster: the map is loaded from the nodes the book names, so a
 * lane opened after the URL's node went away finds the cluster all the
 * same. */
static struct dlock__router *router_from_book(dlock__conn *conn)
{
    dlock__book_entry any;
    struct dlock__router *r;
    if (dlock__book_read(conn->book, &any, 1) == 0 || !(r = router_new(conn, true)))
        return NULL;
    r->refresh_due = true;
    return r;
}

int dlock__route_prepare(dlock__conn *conn, int slot, int64_t deadline_ns)
{
    struct dlock__router *r = conn->router ? conn->router : router_from_book(conn);
    if (!r)
        return 0;
    if (!r->cluster)
        return sentinel_prepare(conn, r, deadline_ns);
    if (r->refresh_due) {
        r->refresh_due = false;
        refresh(conn, r, deadline_ns);
    }
    if (slot >= 0 && r->owner[slot])
        switch_to(conn, r, r->owner[slot] - 1u);
    return 0;
}

int dlock__route_probe_cluster(dlock__conn *conn, const char *key, int64_t deadline_ns)
{
    const char *argv[] = {"CLUSTER", "KEYSLOT", key};
    dlock__reply *a = NULL;
    struct dlock__router *r;
    int rc;
    if (conn->router)
        return conn->router->cluster;
    rc = roundtrip(conn, 3, argv, deadline_ns, &a);
    if (!a || a->type != DLOCK__REPLY_INTEGER) {
        dlock__reply_free(a);
        return rc < 0 ? rc : 0;
    }
    dlock__reply_free(a);
    r = cluster_router(conn);
    if (!r)
        return DLOCK_ENOMEM;
    refresh(conn, r, deadline_ns);
    return 1;
}

bool dlock__route_learn(dlock__conn *conn, const char *key, int64_t deadline_ns)
{
    if (!conn->learnt)
        conn->learnt = dlock__route_probe_cluster(conn, key, deadline_ns) >= 0;
    return conn->learnt;
}

bool dlock__route_is_cluster(const dlock__conn *conn)
{
    return conn->router && conn->router->cluster;
}

int dlock__route_server(const dlock__conn *conn, int slot)
{
    const struct dlock__router *r = conn->router;
    if (!r || !r->cluster)
        return 0;
    /* As dlock__route_prepare() goes: to the owner if known, else nowhere new. */
    return slot >= 0 && r->owner[slot] ? r->owner[slot] : (int)r->active + 1;
}

unsigned dlock__route_reroutes(const dlock__conn *conn)
{
    return conn->router ? conn->router->reroutes : 0;
}

bool dlock__route_same(const dlock__conn *conn, int a, int b)
{
    const struct dlock__router *r = conn->router;
    return !r || !r->cluster || a < 0 || b < 0 || r->owner[a] == r->owner[b];
}

size_t dlock__route_master_slots(const dlock__conn *conn, int *slots, size_t max)
{
    const struct dlock__router *r = conn->router;
    bool seen[DLOCK__ROUTE_NODES_MAX + 1] = {false};
    size_t n = 0;
    if (!r || !r->cluster)
        return 0;
    for (int s = 0; s < DLOCK__SLOTS && n < max; s++) {
        if (r->owner[s] && !seen[r->owner[s]]) {
            seen[r->owner[s]] = true;
            slots[n++] = s;
        }
    }
    return n;
}

/* A node that refuses connections (a master that died, the URL's node):
 * any other node the client knows says who serves the slot now. The call
 * goes again if that is another node; while the map still names the one
 * that is gone (its replica not promoted yet), the call fails and a wait
 * tries again later. */
static enum dlock__reroute after_unreachable(dlock__conn *conn, struct dlock__router *r, int slot,
                                             int64_t deadline_ns)
{
    size_t gone = r->active;
    int64_t now = dlock__now_ns();
    char why[sizeof(conn->err)];
    int loaded;
    if (r->refreshed_ns && now - r->refreshed_ns < REFRESH_MIN_NS)
        return DLOCK__ROUTE_DONE; /* the map is as fresh as can be */
    r->refreshed_ns = now;
    memcpy(why, conn->err, sizeof(why));
    loaded = load_map_anywhere(conn, r, gone, deadline_ns);
    if (loaded < 0 || (slot >= 0 && r->owner[slot] == gone + 1)) {
        /* No other master serves the slot (yet): the failure is the gone
         * node's, not that of the node that answered the map. */
        switch_to(conn, r, gone);
        if (loaded == 0)
            snprintf(conn->err, sizeof(conn->err), "%.150s (the master of hash slot %d; no "
                     "other node serves it yet)", why, slot);
        else
            memcpy(conn->err, why, sizeof(why));
        return DLOCK__ROUTE_DONE;
    }
    if (slot >= 0 && r->owner[slot])
        switch_to(conn, r, r->owner[slot] - 1u);
    return DLOCK__ROUTE_AGAIN;
}

/* The slot's master, if known, else the seed: after TRYAGAIN from a node an
 * ASK led to, the call starts again where the map says. */
static void back_to_owner(dlock__conn *conn, int slot)
{
    struct dlock__router *r = conn->router;
    if (r && r->cluster && slot >= 0)
        switch_to(conn, r, r->owner[slot] ? r->owner[slot] - 1u : 0);
}

static enum dlock__reroute after_error_reply(dlock__conn *conn, const char *text, int slot,
                                             int64_t deadline_ns)
{
    struct dlock__router *r = conn->router;
    if (starts_with(text, "MOVED "))
        return follow_moved(conn, text + 6);
    if (starts_with(text, "ASK "))
        return follow_ask(conn, text + 4);
    if (starts_with(text, "TRYAGAIN") || starts_with(text, "CLUSTERDOWN")) {
        if (!dlock__route_pause(deadline_ns))
            return DLOCK__ROUTE_DONE;
        back_to_owner(conn, slot);
        return DLOCK__ROUTE_LATER;
    }
    /* A write inside a script on a replica fails with READONLY, before the
     * script wrote anything (the scripts write last). */
    if (r && !r->cluster && (starts_with(text, "READONLY") || strstr(text, " READONLY ")))
        return sentinel_after(conn, r, deadline_ns);
    return DLOCK__ROUTE_DONE;
}

static enum dlock__reroute reroute(dlock__conn *conn, const dlock__reply *reply, int error,
                                   bool sent, int slot, int64_t deadline_ns)
{
    struct dlock__router *r = conn->router;
    if (reply && reply->type == DLOCK__REPLY_ERROR)
        return after_error_reply(conn, reply->str, slot, deadline_ns);
    if (!r || error != DLOCK_ECONN || sent)
        return DLOCK__ROUTE_DONE;
    if (!r->cluster)
        return sentinel_after(conn, r, deadline_ns);
    return after_unreachable(conn, r, slot, deadline_ns);
}

enum dlock__reroute dlock__route_after(dlock__conn *conn, const dlock__reply *reply, int error,
                                       bool sent, int slot, int64_t deadline_ns)
{
    enum dlock__reroute how = reroute(conn, reply, error, sent, slot, deadline_ns);
    if (how != DLOCK__ROUTE_DONE && conn->router) /* no router: the same server again */
        conn->router->reroutes++;
    return how;
}

bool dlock__route_unserved(dlock__conn *conn, const dlock__reply *reply, int slot)
{
    const char *text = reply && reply->type == DLOCK__REPLY_ERROR ? reply->str : "";
    const char *label = conn->ep->label;
    if (starts_with(text, "TRYAGAIN"))
        snprintf(conn->err, sizeof(conn->err),
                 "%s: hash slot %d is being migrated to another master, and its keys cannot "
                 "all be reached until that ends", label, slot);
    else if (starts_with(text, "CLUSTERDOWN"))
        snprintf(conn->err, sizeof(conn->err), "%s: the cluster is down (hash slot %d)", label,
                 slot);
    else if (starts_with(text, "MOVED ") || starts_with(text, "ASK "))
        snprintf(conn->err, sizeof(conn->err),
                 "%s: hash slot %d kept moving between nodes during the call", label, slot);
    else
        return false;
    return true;
}

void dlock__route_free(dlock__conn *conn)
{
    struct dlock__router *r = conn->router;
    if (!r)
        return;
    switch_to(conn, r, 0);
    for (size_t i = 1; i < DLOCK__ROUTE_NODES_MAX; i++)
        if (r->nodes[i].in_use)
            forget_node(r, i);
    conn->ep = r->seed;
    conn->addrs = r->seed_addrs;
    dlock__endpoint_clear(&r->primary);
    if (r->primary_addrs)
        freeaddrinfo(r->primary_addrs);
    for (size_t i = 0; i < r->n_sentinels; i++) {
        dlock__conn_destroy(&r->sentinels[i].conn);
        dlock__endpoint_clear(&r->sentinels[i].ep);
        if (r->sentinels[i].addrs)
            freeaddrinfo(r->sentinels[i].addrs);
    }
    free(r);
    conn->router = NULL;
}

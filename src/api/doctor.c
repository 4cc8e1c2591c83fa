/* dlock_doctor: can these servers keep a lock? Each server is asked what
 * it is (INFO, two CONFIG GETs, TIME), then every command and script dlock
 * needs is tried on a scratch lock, whose keys are removed afterwards.
 * Nothing else is written. */
#include "attempt.h"
#include "clock.h"
#include "lane.h"
#include "names.h"
#include "probe.h"
#include "route.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEFAULT_TTL_MS 30000
#define SKEW_MAX_US 100000 /* clock offset that is worth a warning, beyond the measuring error */
#define TIME_SAMPLES 3     /* TIME round trips; the shortest measures best */
/* The scratch keys expire even if removing them fails. */
#define SCRATCH_TTL_MS 10000
#define TEXT(x) TEXT_OF(x)
#define TEXT_OF(x) #x
#define SCRATCH_TTL TEXT(SCRATCH_TTL_MS)

struct item {
    dlock_finding f;
    char server[128];
    char evidence[768];
    const char *fix;
};

struct dlock_report {
    struct item *items;
    size_t n, cap;
    bool nomem;
};

/* What one server told about itself. A cluster endpoint is a server per
 * master, a sentinel one the primary the sentinels name. */
struct node {
    char label[128]; /* the server, and which it is of its endpoint */
    size_t endpoint;
    int slot; /* a hash slot the cluster master owns; -1: not a cluster */
    bool reached;
    char info[16384];
    char run_id[48];
    int64_t offset_us, rtt_us; /* its clock minus ours; INT64_MIN: unknown */
};

static void add(dlock_report *r, const char *id, dlock_severity sev, const char *server,
                int64_t value_ms, const char *fix, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));

static void add(dlock_report *r, const char *id, dlock_severity sev, const char *server,
                int64_t value_ms, const char *fix, const char *fmt, ...)
{
    struct item *it;
    va_list ap;
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 16;
        struct item *grown = realloc(r->items, cap * sizeof(*grown));
        if (!grown) {
            r->nomem = true;
            return;
        }
        r->items = grown;
        r->cap = cap;
    }
    it = &r->items[r->n++];
    snprintf(it->server, sizeof(it->server), "%s", server);
    va_start(ap, fmt);
    vsnprintf(it->evidence, sizeof(it->evidence), fmt, ap);
    va_end(ap);
    it->fix = fix;
    it->f = (dlock_finding){id, sev, NULL, NULL, fix, value_ms};
}

/* INFO's field `name`, or "" */
static const char *field(const struct node *nd, const char *name, char *buf, size_t len)
{
    dlock__info_field(nd->info, name, buf, len);
    return buf;
}

/* Runs a command on the server of endpoint `i` that calls about hash slot
 * `slot` go to (-1: the one its connection is at now, the one asked
 * last): 0 and the reply in `out` (a string's or an error's text; an
 * array's strings joined by spaces), or the failure's code with its detail
 * in `out`. An error reply returns 1. */
static int ask_at(dlock_client *c, size_t i, int slot, int argc, const char *const *argv,
                  char *out, size_t len)
{
    dlock__reply *r = NULL;
    int rc = dlock__probe_slot(c, i, slot, argc, argv, &r, out, len);
    if (rc < 0)
        return rc;
    out[0] = '\0';
    if (r->type == DLOCK__REPLY_STRING || r->type == DLOCK__REPLY_ERROR ||
        r->type == DLOCK__REPLY_STATUS)
        snprintf(out, len, "%s", r->str);
    for (size_t k = 0, used = 0; r->type == DLOCK__REPLY_ARRAY && k < r->elements && used < len; k++)
        if (r->element[k]->type == DLOCK__REPLY_STRING)
            used += (size_t)snprintf(out + used, len - used, "%s%s", k ? " " : "",
                                     r->element[k]->str);
    rc = r->type == DLOCK__REPLY_ERROR;
    dlock__reply_free(r);
    return rc;
}

static int ask(dlock_client *c, size_t i, int argc, const char *const *argv, char *out,
               size_t len)
{
    return ask_at(c, i, -1, argc, argv, out, len);
}

/* CONFIG GET `name` into `out`: 0, or nonzero with the reason in `out`. */
static int config_get(dlock_client *c, size_t i, const char *name, char *out, size_t len)
{
    const char *argv[] = {"CONFIG", "GET", name};
    size_t skip = strlen(name) + 1;
    int rc = ask(c, i, 3, argv, out, len);
    if (rc == 0 && strncmp(out, name, skip - 1) == 0 && out[skip - 1] == ' ')
        memmove(out, out + skip, strlen(out + skip) + 1);
    else if (rc == 0) /* an empty array: no such parameter */
        out[0] = '\0';
    return rc;
}

static int64_t realtime_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* The server's clock against ours, from the TIME round trip that took
 * least: its time minus the middle of the round trip, give or take half
 * of it. */
static void measure_clock(dlock_client *c, size_t i, struct node *nd)
{
    const char *argv[] = {"TIME"};
    char out[128];
    nd->offset_us = nd->rtt_us = INT64_MIN;
    for (int k = 0; k < TIME_SAMPLES; k++) {
        int64_t t0 = realtime_us(), m0 = dlock__now_ns(), m1, sec, usec;
        char *end;
        if (ask(c, i, 1, argv, out, sizeof(out)) != 0)
            return;
        m1 = dlock__now_ns();
        sec = strtoll(out, &end, 10);
        usec = strtoll(end, &end, 10);
        if (end == out || *end)
            return;
        if (nd->rtt_us == INT64_MIN || (m1 - m0) / 1000 < nd->rtt_us) {
            nd->rtt_us = (m1 - m0) / 1000;
            nd->offset_us = sec * 1000000 + usec - (t0 + nd->rtt_us / 2);
        }
    }
}

static const char fix_unreachable[] =
    "start the server, or correct its address; check firewalls";
static const char fix_auth[] =
    "correct the user and password (the URL, or the library's user and password options), or "
    "the TLS certificates; the evidence says which";
static const char fix_not_checked[] =
    "run doctor as a user allowed INFO and CONFIG GET (e.g. the default user) to check this";

/* Which server of its endpoint a node is, once INFO reached it: a
 * finding names the server it is about. */
static void name_node(dlock_client *c, struct node *nd)
{
    const dlock__endpoint *ep = &c->endpoints[nd->endpoint];
    const char *server = dlock__probe_label(c, nd->endpoint);
    if (nd->slot >= 0)
        snprintf(nd->label, sizeof(nd->label), "%.50s, a master of the cluster at %.30s",
                 server, ep->label);
    else if (ep->service && strcmp(server, ep->label) == 0) /* still the first sentinel's */
        snprintf(nd->label, sizeof(nd->label), "%.50s, no primary named %.30s found", ep->label,
                 ep->service);
    else if (ep->service)
        snprintf(nd->label, sizeof(nd->label), "%.50s, the primary the sentinels name %.30s",
                 server, ep->service);
    else
        snprintf(nd->label, sizeof(nd->label), "%s", ep->label);
}

/* INFO, then what only CONFIG GET tells. Returns false when the server
 * cannot be reached at all. INFO goes to the node's master, and the
 * endpoint's connection stays there: the other questions follow it. */
static bool look_at(dlock_client *c, size_t i, struct node *nd, dlock_report *r)
{
    const char *argv[] = {"INFO"};
    int rc = ask_at(c, i, nd->slot, 1, argv, nd->info, sizeof(nd->info));
    name_node(c, nd);
    if (rc == DLOCK_EAUTH || rc == DLOCK_ETLS) {
        add(r, "AUTH_FAILED", DLOCK_SEVERITY_ERROR, nd->label, 0, fix_auth, "%s", nd->info);
        return false;
    }
    if (rc < 0) {
        add(r, "UNREACHABLE", DLOCK_SEVERITY_ERROR, nd->label, 0, fix_unreachable, "%s",
            nd->info);
        return false;
    }
    nd->reached = true;
    if (rc > 0) {
        add(r, "NOT_CHECKED", DLOCK_SEVERITY_INFO, nd->label, 0, fix_not_checked,
            "INFO refused (%.200s): eviction, persistence, replicas and version not checked; "
            "whether two URLs are one server is checked by address only",
            nd->info);
        nd->info[0] = '\0';
    }
    field(nd, "run_id", nd->run_id, sizeof(nd->run_id));
    measure_clock(c, i, nd);
    return true;
}

static const char fix_evictable[] =
    "set maxmemory-policy noeviction (CONFIG SET and redis.conf): every lock key has a TTL, so "
    "the volatile-* policies evict locks too; a full server then refuses new locks instead of "
    "dropping held ones";

static void check_eviction(const struct node *nd, dlock_report *r)
{
    char maxmemory[32], policy[64];
    field(nd, "maxmemory", maxmemory, sizeof(maxmemory));
    field(nd, "maxmemory_policy", policy, sizeof(policy));
    if (!policy[0] || strcmp(policy, "noeviction") == 0)
        return;
    if (strtoull(maxmemory, NULL, 10) > 0)
        add(r, "EVICTABLE", DLOCK_SEVERITY_ERROR, nd->label, 0, fix_evictable,
            "maxmemory %s bytes with maxmemory-policy %s: a full server evicts held locks",
            maxmemory, policy);
    else
        add(r, "EVICTABLE", DLOCK_SEVERITY_WARNING, nd->label, 0, fix_evictable,
            "maxmemory-policy %s (maxmemory is 0, no limit, for now): once a limit is set, "
            "a full server evicts held locks", policy);
}

static const char fix_persistence[] =
    "appendonly yes with appendfsync always; or apply the restart rule: keep a restarted "
    "server out for longer than the longest TTL (and the largest clock offset) before it "
    "rejoins, so that no lock it forgot is still held";
static const char fix_fsync[] =
    "appendfsync always; or apply the restart rule after a crash: keep the server out for "
    "longer than the longest TTL before it rejoins";

static void check_persistence(dlock_client *c, size_t i, const struct node *nd, dlock_report *r)
{
    char aof[8], fsync[256];
    field(nd, "aof_enabled", aof, sizeof(aof));
    if (!aof[0])
        return; /* INFO refused: said already */
    if (strcmp(aof, "1") != 0) {
        char save[256];
        if (config_get(c, i, "save", save, sizeof(save)) != 0)
            snprintf(save, sizeof(save), "unknown: CONFIG GET refused");
        add(r, "NO_PERSISTENCE", DLOCK_SEVERITY_WARNING, nd->label, 0, fix_persistence,
            "appendonly no, save '%s': a restart loses every lock held%s", save,
            save[0] ? " since the last snapshot" : "");
        return;
    }
    if (config_get(c, i, "appendfsync", fsync, sizeof(fsync)) != 0)
        add(r, "NOT_CHECKED", DLOCK_SEVERITY_INFO, nd->label, 0, fix_not_checked,
            "appendonly yes, but CONFIG GET appendfsync refused (%.200s)", fsync);
    else if (strcmp(fsync, "always") != 0)
        add(r, "FSYNC_EVERYSEC", DLOCK_SEVERITY_WARNING, nd->label, 0, fix_fsync,
            "appendonly yes with appendfsync %s: a crash loses the %s writes, locks among them",
            fsync, strcmp(fsync, "no") == 0 ? "unsynced" : "last second's");
}

static const char fix_replicas[] =
    "replicas receive writes asynchronously: a failover can promote one that never saw a "
    "lock. Use independent masters (Redlock) and no automatic failover, or have every grant "
    "wait for the replicas (--replicas K, the client option replicas), and apply the "
    "restart rule (--restart-delay) to a promoted replica";
static const char fix_replica[] = "point dlock at the master, not at a replica";

/* A client that waits for `waited` replicas (--replicas) has only the
 * connected ones beyond those replicated asynchronously: a failover may
 * promote one of them. */
static void check_replication(const struct node *nd, int waited, dlock_report *r)
{
    char role[16], replicas[16];
    field(nd, "role", role, sizeof(role));
    field(nd, "connected_slaves", replicas, sizeof(replicas));
    if (strcmp(role, "slave") == 0) {
        char master[128];
        field(nd, "master_host", master, sizeof(master));
        add(r, "REPLICA", DLOCK_SEVERITY_ERROR, nd->label, 0, fix_replica,
            "this server is a replica (of %s): it refuses writes (READONLY)", master);
    } else if (strtol(replicas, NULL, 10) > waited) {
        add(r, "ASYNC_REPLICAS", DLOCK_SEVERITY_WARNING, nd->label, 0, fix_replicas,
            "%s replica(s) connected (connected_slaves), %d waited for (--replicas): the others "
            "are replicated asynchronously", replicas, waited);
    }
}

static const char fix_version[] =
    "upgrade Redis to 5.0 or later (Debian 12 ships 7.0): dlock's scripts read TIME before "
    "they write, which needs the script effects replication that 5.0 made the default";

static void check_version(const struct node *nd, dlock_report *r)
{
    char version[32];
    field(nd, "redis_version", version, sizeof(version));
    if (version[0] && strtol(version, NULL, 10) < 5)
        add(r, "VERSION", DLOCK_SEVERITY_ERROR, nd->label, 0, fix_version,
            "redis_version %s", version);
}

static const char fix_slow[] =
    "the round trip must fit in the per-node deadline (max(5 ms, TTL/20) with several "
    "servers, TTL/4 with one, capped by the command timeout) with room to spare: use a "
    "longer TTL, or a server nearer to the clients";

static void check_round_trip(dlock_client *c, const struct node *nd, int64_t ttl_ms,
                             dlock_report *r)
{
    int64_t deadline_us = dlock__node_deadline(c, ttl_ms, 0) / 1000;
    dlock_severity sev = nd->rtt_us >= deadline_us       ? DLOCK_SEVERITY_ERROR
                         : nd->rtt_us * 4 >= deadline_us  ? DLOCK_SEVERITY_WARNING
                                                          : DLOCK_SEVERITY_INFO;
    if (nd->rtt_us == INT64_MIN || (sev == DLOCK_SEVERITY_INFO && nd->rtt_us * 20 < deadline_us))
        return;
    add(r, "SLOW", sev, nd->label, nd->rtt_us / 1000, fix_slow,
        "round trip %.3f ms against a per-node deadline of %" PRId64 " ms (TTL %" PRId64 " ms)",
        (double)nd->rtt_us / 1000, deadline_us / 1000, ttl_ms);
}

static const char fix_clock[] =
    "run NTP (chrony, systemd-timesyncd) on every host: fencing tokens start from the "
    "servers' clocks, and the restart rule assumes offsets well below the TTL";

static void check_clock(const struct node *nd, dlock_report *r)
{
    int64_t off = nd->offset_us, err = nd->rtt_us / 2;
    if (off == INT64_MIN || llabs(off) - err <= SKEW_MAX_US)
        return;
    add(r, "CLOCK_SKEW", DLOCK_SEVERITY_WARNING, nd->label, off / 1000, fix_clock,
        "the server's clock is %+.1f ms off ours (give or take %.1f ms)", (double)off / 1000,
        (double)err / 1000);
}

static const char fix_set[] = "give each Redlock vote its own independent server: one "
                              "server, or three or more";

/* Between servers: the widest spread of their offsets, and servers that
 * are one (the same run_id). */
static void check_set(const struct node *nds, size_t n, dlock_report *r)
{
    size_t lo = n, hi = n;
    for (size_t i = 0; i < n; i++) {
        if (nds[i].offset_us == INT64_MIN)
            continue;
        lo = lo == n || nds[i].offset_us < nds[lo].offset_us ? i : lo;
        hi = hi == n || nds[i].offset_us > nds[hi].offset_us ? i : hi;
        for (size_t j = i + 1; j < n && nds[i].run_id[0]; j++)
            if (strcmp(nds[i].run_id, nds[j].run_id) == 0)
                add(r, "SAME_NODE", DLOCK_SEVERITY_ERROR, "", 0, fix_set,
                    "%s and %s are one server (run_id %s): one crash takes two votes",
                    nds[i].label, nds[j].label, nds[i].run_id);
    }
    if (n > 1 && lo < n && nds[hi].offset_us - nds[lo].offset_us - nds[hi].rtt_us / 2 -
                                   nds[lo].rtt_us / 2 > SKEW_MAX_US)
        add(r, "CLOCK_SKEW", DLOCK_SEVERITY_WARNING, "",
            (nds[hi].offset_us - nds[lo].offset_us) / 1000, fix_clock,
            "the clocks of %s and %s are %.1f ms apart", nds[hi].label, nds[lo].label,
            (double)(nds[hi].offset_us - nds[lo].offset_us) / 1000);
}

static const char fix_acl[] =
    "grant the user what dlock needs (docs/security.md): +evalsha +eval +type +get +set +del "
    "+pttl +pexpire +time +spublish +ssubscribe +sunsubscribe (+wait with --replicas, +xadd "
    "with the audit), keys ~NAME* ~{NAME* and channels &{NAME*; a user allowed only some keys: "
    "run 'dlock doctor NAME' with a name of those";
static const char fix_acl_kinds[] =
    "for semaphores, fair and shared locks (and a mutex that waits on one server or on a name "
    "held shared) grant +zadd +zrem +zscore +zrange +zrangebyscore +zremrangebyscore +zcount "
    "+hget +hset +hdel (docs/security.md)";
static const char fix_acl_optional[] =
    "nothing fails without these; grant them for what they give (docs/security.md)";
static const char fix_lock[] =
    "read the evidence: the server's own words say why; fix that, then run doctor again";

/* Redis' words for a command, key or channel the user may not use. */
static bool denied(const char *reply)
{
    return strncmp(reply, "NOPERM", 6) == 0 || strstr(reply, "no permission") ||
           strstr(reply, "can't run");
}

/* Takes, extends, looks at and releases the scratch lock through the
 * library: every script, as the user runs them. Returns 0, or the failure
 * of the step named in *step (what it left is removed with the scratch
 * keys later). */
static int lock_round(dlock_client *c, const char *name, const char **step)
{
    dlock_lock *l = NULL;
    dlock_status *st = NULL;
    int rc;
    *step = "acquire";
    if ((rc = dlock_lock_acquire(&l, c, name, SCRATCH_TTL_MS, NULL)) < 0)
        return rc;
    *step = "extend";
    rc = dlock_lock_extend(l, SCRATCH_TTL_MS);
    if (rc == 0) {
        *step = "status";
        rc = dlock_status_query(&st, c, name);
        dlock_status_free(st);
    }
    if (rc == 0) {
        *step = "release";
        rc = dlock_lock_release(l);
    }
    dlock_lock_free(l);
    return rc;
}

static void try_lock(dlock_client *c, const char *name, dlock_report *r)
{
    const char *step;
    int rc = lock_round(c, name, &step);
    if (rc < 0)
        add(r, rc == DLOCK_EAUTH ? "ACL_MISSING" : "LOCK_FAILED", DLOCK_SEVERITY_ERROR, "", 0,
            rc == DLOCK_EAUTH ? fix_acl : fix_lock, "%s of the scratch lock %s: %s (%s)", step,
            name, dlock_err_name(rc), dlock_client_errmsg(c));
}

static bool found(const dlock_report *r, const char *id)
{
    for (size_t k = 0; k < r->n; k++)
        if (strcmp(r->items[k].f.id, id) == 0)
            return true;
    return false;
}

/* When a command is needed: by every lock; by semaphores, fair and shared
 * locks (and a mutex that queues); with the replicas option; with the
 * audit option; or never, an optional one (with several servers only:
 * NEED_REDLOCK), whose refusal costs what its finding says. */
enum need { NEED_LOCK, NEED_KINDS, NEED_REPLICAS, NEED_AUDIT, NEED_OPTIONAL, NEED_REDLOCK };

struct command {
    enum need need;
    int argc;
    const char *argv[8];
};

/* The refusals of one kind of need, as a finding's evidence. */
struct refusals {
    char text[700];
    size_t used;
};

static void refused(struct refusals *f, const struct command *cmd, const char *reply)
{
    if (f->used < sizeof(f->text))
        f->used += (size_t)snprintf(f->text + f->used, sizeof(f->text) - f->used, "%s%s %s: %s",
                                    f->used ? "; " : "", cmd->argv[0],
                                    cmd->argc > 1 ? cmd->argv[1] : "", reply);
}

static bool applies(const struct command *cmd, const dlock_client *c)
{
    return (cmd->need != NEED_REPLICAS || c->replicas) && (cmd->need != NEED_AUDIT || c->audit) &&
           (cmd->need != NEED_REDLOCK || c->n > 1);
}

/* SSUBSCRIBE and SUBSCRIBE leave their connection in subscribed mode. */
static bool subscribes(const struct command *cmd)
{
    return strcmp(cmd->argv[0], "SUBSCRIBE") == 0 || strcmp(cmd->argv[0], "SSUBSCRIBE") == 0;
}

/* SHA1 of "return 1": EVALSHA's permission is checked before the cache
 * is, so NOSCRIPT means allowed. */
#define RETURN_1_SHA "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"

/* Each command dlock sends or its scripts run, sent directly on the
 * scratch keys as the user, where a refusal names it, whatever the
 * server's script cache holds: EVAL is what every call falls back to
 * after a restart or SCRIPT FLUSH, and a script's SPUBLISH goes through
 * pcall, so only this finds a user without it (Redis 7's
 * acl-pubsub-default grants no channel). Keys and channels are those of
 * the scratch name: other names may fall under other patterns. The last
 * one removes the scratch keys. */
static void try_commands(dlock_client *c, size_t i, const dlock__keys *k, const char *zset,
                         const char *hash, const char *stream, dlock_report *r)
{
    const struct command cmds[] = {
        {NEED_LOCK, 3, {"EVAL", "return 1", "0"}},
        {NEED_LOCK, 3, {"EVALSHA", RETURN_1_SHA, "0"}},
        {NEED_LOCK, 2, {"GET", k->lock}},
        {NEED_LOCK, 5, {"SET", k->lock, "doctor", "PX", SCRATCH_TTL}},
        {NEED_LOCK, 2, {"PTTL", k->lock}},
        {NEED_LOCK, 3, {"PEXPIRE", k->lock, SCRATCH_TTL}},
        {NEED_LOCK, 2, {"TYPE", k->lock}},
        {NEED_LOCK, 1, {"TIME"}},
        {NEED_LOCK, 3, {"SPUBLISH", k->channel, "doctor"}},
        {NEED_LOCK, 2, {"SUNSUBSCRIBE", k->channel}},
        {NEED_LOCK, 2, {"SSUBSCRIBE", k->channel}},
        {NEED_KINDS, 4, {"ZADD", zset, "1", "doctor"}},
        {NEED_KINDS, 3, {"ZSCORE", zset, "doctor"}},
        {NEED_KINDS, 4, {"ZRANGE", zset, "0", "-1"}},
        {NEED_KINDS, 4, {"ZRANGEBYSCORE", zset, "-inf", "+inf"}},
        {NEED_KINDS, 4, {"ZREMRANGEBYSCORE", zset, "-inf", "0"}},
        {NEED_KINDS, 4, {"ZCOUNT", zset, "-inf", "+inf"}},
        {NEED_KINDS, 3, {"ZREM", zset, "doctor"}},
        {NEED_KINDS, 4, {"HSET", hash, "doctor", "1"}},
        {NEED_KINDS, 3, {"HGET", hash, "doctor"}},
        {NEED_KINDS, 3, {"HDEL", hash, "doctor"}},
        {NEED_OPTIONAL, 3, {"PUBLISH", k->channel, "doctor"}},
        {NEED_OPTIONAL, 2, {"UNSUBSCRIBE", k->channel}},
        {NEED_OPTIONAL, 2, {"SUBSCRIBE", k->channel}},
        {NEED_REPLICAS, 3, {"WAIT", "0", "1"}},
        {NEED_AUDIT, 7, {"XADD", stream, "MAXLEN", "1", "*", "doctor", "1"}},
        {NEED_AUDIT, 3, {"PEXPIRE", stream, SCRATCH_TTL}},
        {NEED_OPTIONAL, 1, {"ASKING"}},
        {NEED_OPTIONAL, 3, {"CLUSTER", "KEYSLOT", k->channel}},
        {NEED_OPTIONAL, 2, {"EXISTS", k->lock}},
        {NEED_REDLOCK, 3, {"SCRIPT", "LOAD", "return 1"}},
        {NEED_LOCK, 8, {"DEL", k->lock, k->owner, k->fence, zset, hash, stream, k->freed}},
    };
    struct refusals lock = {"", 0}, kinds = {"", 0}, optional = {"", 0};
    char reply[256];
    for (size_t j = 0; j < sizeof(cmds) / sizeof(cmds[0]); j++) {
        const struct command *cmd = &cmds[j];
        bool optional_one = cmd->need == NEED_OPTIONAL || cmd->need == NEED_REDLOCK;
        int rc;
        if (!applies(cmd, c))
            continue;
        rc = ask(c, i, cmd->argc, cmd->argv, reply, sizeof(reply));
        if (subscribes(cmd))
            dlock__conn_close(&c->main.conns[i]);
        if (rc > 0 && denied(reply))
            refused(cmd->need == NEED_KINDS ? &kinds : optional_one ? &optional : &lock, cmd,
                    reply);
    }
    if (lock.used)
        add(r, "ACL_MISSING", DLOCK_SEVERITY_ERROR, c->endpoints[i].label, 0, fix_acl,
            "refused: %s", lock.text);
    if (kinds.used)
        add(r, "ACL_KINDS", DLOCK_SEVERITY_WARNING, c->endpoints[i].label, 0, fix_acl_kinds,
            "refused, so semaphores, fair and shared locks fail (and a mutex that waits on one "
            "server or on a name held shared): %s", kinds.text);
    if (optional.used)
        add(r, "ACL_OPTIONAL", DLOCK_SEVERITY_INFO, c->endpoints[i].label, 0, fix_acl_optional,
            "refused, optional (CLUSTER KEYSLOT: where a waiter listens on a cluster; EXISTS: "
            "a status while a cluster slot migrates; ASKING: a call a slot migration "
            "redirected; PUBLISH, "
            "SUBSCRIBE: the release channel before Redis 7; SCRIPT LOAD: Redlock's scripts ready "
            "on a fresh connection): %s", optional.text);
}

/* NAME-dlock-doctor-RANDOM, or dlock-doctor-RANDOM. */
static void scratch_name(dlock_client *c, const char *name, char *out, size_t len)
{
    uint64_t a = dlock__random_below(c, UINT64_MAX), b = dlock__random_below(c, UINT64_MAX);
    snprintf(out, len, "%s%sdlock-doctor-%016" PRIx64 "%016" PRIx64, name ? name : "",
             name ? "-" : "", a, b);
}

static void examine(dlock_client *c, struct node *nd, int64_t ttl_ms, dlock_report *r)
{
    size_t i = nd->endpoint;
    if (!look_at(c, i, nd, r))
        return;
    check_eviction(nd, r);
    check_persistence(c, i, nd, r);
    check_replication(nd, c->replicas, r);
    check_version(nd, r);
    check_round_trip(c, nd, ttl_ms, r);
    check_clock(nd, r);
}

/* The public findings point into the items, which no longer move. */
static int finish(dlock_report *r, dlock_report **out)
{
    if (r->nomem) {
        dlock_report_free(r);
        return DLOCK_ENOMEM;
    }
    for (size_t k = 0; k < r->n; k++) {
        r->items[k].f.server = r->items[k].server;
        r->items[k].f.evidence = r->items[k].evidence;
    }
    *out = r;
    return 0;
}

/* The servers to examine: each endpoint's own, or on a cluster each of its
 * masters (as many as the router keeps connections to). Returns how many
 * into *out (freed by the caller), 0 if out of memory. */
static size_t plan_nodes(dlock_client *c, struct node **out)
{
    int slots[DLOCK__NODES_MAX][DLOCK__ROUTE_NODES_MAX];
    size_t masters[DLOCK__NODES_MAX], total = 0, k = 0;
    for (size_t i = 0; i < c->n; i++) {
        masters[i] = dlock__probe_masters(c, i, slots[i], DLOCK__ROUTE_NODES_MAX);
        total += masters[i] ? masters[i] : 1;
    }
    if (!total || !(*out = calloc(total, sizeof(**out))))
        return 0; /* a client has a server at least: only memory can fail */
    for (size_t i = 0; i < c->n; i++) {
        for (size_t m = 0; m < (masters[i] ? masters[i] : 1); m++, k++) {
            (*out)[k].endpoint = i;
            (*out)[k].slot = masters[i] ? slots[i][m] : -1;
        }
    }
    return total;
}

int dlock_doctor(dlock_report **out, dlock_client *c, const char *name, int64_t ttl_ms)
{
    char scratch[DLOCK_NAME_MAX + 64], why[256];
    struct node *nds = NULL;
    size_t n;
    dlock_report *r;
    dlock__keys keys;
    char *zset, *hash; /* scratch keys of a semaphore's, fair or shared lock's types */
    char *stream;      /* and of an audit stream's */
    bool any = false;
    int rc = dlock__call_start(c, out);
    if (rc == 0)
        rc = dlock__check_ttl(&c->main, ttl_ms ? ttl_ms : DEFAULT_TTL_MS);
    if (rc < 0)
        return rc;
    scratch_name(c, name, scratch, sizeof(scratch));
    if ((rc = dlock__keys_make(&keys, scratch, why, sizeof(why))) < 0) {
        dlock__set_error(&c->main, "%s", why);
        return rc;
    }
    r = calloc(1, sizeof(*r));
    zset = dlock__aux_key(scratch, "queue");
    hash = dlock__aux_key(scratch, "wake");
    stream = dlock__aux_key(scratch, "audit");
    if (r && (!zset || !hash || !stream))
        r->nomem = true;
    n = plan_nodes(c, &nds);
    for (size_t k = 0; r && k < n; k++) {
        examine(c, &nds[k], ttl_ms ? ttl_ms : DEFAULT_TTL_MS, r);
        any |= nds[k].reached;
    }
    if (r && nds) {
        check_set(nds, n, r);
        /* What a lock client refuses at open (an inspecting one opened it),
         * unless the run_ids said it already; a lock on it is refused too */
        if (c->refusal[0] && !found(r, c->refusal_id))
            add(r, c->refusal_id, DLOCK_SEVERITY_ERROR, "", 0, fix_set, "%s", c->refusal);
        if (any && !c->refusal[0] && !found(r, "SAME_NODE"))
            try_lock(c, scratch, r);
        /* once per endpoint: the scratch keys are on one server of it */
        bool tried[DLOCK__NODES_MAX] = {false};
        for (size_t k = 0; k < n; k++) {
            size_t i = nds[k].endpoint;
            if (nds[k].reached && !tried[i] && zset && hash && stream) {
                tried[i] = true;
                try_commands(c, i, &keys, zset, hash, stream, r);
            }
        }
    }
    if (r && !nds)
        r->nomem = true;
    free(nds);
    free(zset);
    free(hash);
    free(stream);
    dlock__keys_clear(&keys);
    c->main.errmsg[0] = '\0';
    return r ? finish(r, out) : DLOCK_ENOMEM;
}

size_t dlock_report_count(const dlock_report *r)
{
    return r ? r->n : 0;
}

const dlock_finding *dlock_report_finding(const dlock_report *r, size_t i)
{
    return r && i < r->n ? &r->items[i].f : NULL;
}

int dlock_report_worst(const dlock_report *r)
{
    int worst = -1;
    for (size_t k = 0; r && k < r->n; k++)
        worst = (int)r->items[k].f.severity > worst ? (int)r->items[k].f.severity : worst;
    return worst;
}

void dlock_report_free(dlock_report *r)
{
    if (!r)
        return;
    free(r->items);
    free(r);
}

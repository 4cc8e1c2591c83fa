/* The checker: a fenced store that answers the clients' writes, a history
 * written as JSON lines, and the judgement of that history. */
#include "chaos.h"

#include <dlock.h>

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define SLOW_RELEASE_NS (100 * 1000000LL) /* a node deadline of TTL 2 s */
#define ATTEMPT_SLACK_MS 200 /* scheduling on two busy cores, sanitizers */
/* Fair runs: a waiter that asked this much earlier than another was in the
 * queue first (the ask is timed before the call; scheduling may delay the
 * join), and a stall may exceed the lease and a renewal by this much. */
#define FIFO_SLACK_NS (50 * 1000000LL)
#define STALL_SLACK_MS 500

struct grant {
    int client;
    int name;     /* the place: a name's slot (see place_of()); for a mutex, the name */
    int sem_name; /* the name itself */
    uint64_t fence;
    uint32_t nodes;
    int64_t attempt, start, until; /* attempt began, granted, validity ends */
    int64_t end; /* release sent or loss reported */
    int64_t enter, exit;
    long write_seq; /* the store's count of writes when it took this one: its order */
    bool write_accepted;
    bool shared; /* a shared holder's: overlaps others of its kind */
};

struct checker {
    const struct chaos_config *cfg;
    FILE *history;
    struct grant *grants;
    size_t n_grants, cap_grants;
    long current[CHAOS_CLIENTS_MAX]; /* index of each client's open grant, -1 */
    uint64_t store[CHAOS_NAMES_MAX]; /* highest fence written per place */
    long writes;                     /* the store's writes so far */
    struct fault_event faults[4096];
    size_t n_faults;
    struct chaos_msg losses[4096];
    size_t n_losses;
    struct verdict live;
    /* What checker_judge() found overlapping, for the audit (audit.c). */
    struct chaos_overlap overlaps[4096];
    size_t n_overlaps;
    long validity_overlaps_of[CHAOS_NAMES_MAX];
};

int64_t chaos_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

struct checker *checker_new(const struct chaos_config *cfg, FILE *history)
{
    struct checker *k = calloc(1, sizeof(*k));
    if (!k)
        return NULL;
    k->cfg = cfg;
    k->history = history;
    for (int i = 0; i < CHAOS_CLIENTS_MAX; i++)
        k->current[i] = -1;
    return k;
}

/* When a server last lost its data (a restart without persistence, a
 * failover that lost writes): its audit streams went with it. 0: never. */
static int64_t last_data_loss(const struct checker *k)
{
    int64_t last = 0;
    for (size_t i = 0; i < k->n_faults; i++) {
        const struct fault_event *e = &k->faults[i];
        if ((e->kind == FAULT_NODE_RESTART || e->kind == FAULT_FAILOVER) && e->data_lost &&
            e->t_ns > last)
            last = e->t_ns;
    }
    return last;
}

/* Was a node down (crashed, not restarted yet) at `t`? */
static bool node_down_at(const struct checker *k, int64_t t)
{
    bool down[CHAOS_NODES_MAX] = {false};
    for (size_t i = 0; i < k->n_faults && k->faults[i].t_ns <= t; i++) {
        const struct fault_event *e = &k->faults[i];
        if (e->kind == FAULT_NODE_CRASH || e->kind == FAULT_NODE_RESTART)
            down[e->target % CHAOS_NODES_MAX] = e->kind == FAULT_NODE_CRASH;
    }
    for (int n = 0; n < CHAOS_NODES_MAX; n++)
        if (down[n])
            return true;
    return false;
}

/* Could the audit know of the overlap of a and b? Only if the entries that
 * tell it (a's end, b's grant) were written with every node up and no
 * server lost its data afterwards. */
static bool audit_can_know(const struct checker *k, const struct grant *a, const struct grant *b,
                           int64_t lost)
{
    return a->end > lost && b->start > lost && !node_down_at(k, a->end);
}

size_t checker_section_overlaps(const struct checker *k, const struct chaos_overlap **out)
{
    *out = k->overlaps;
    return k->n_overlaps;
}

long checker_validity_overlaps(const struct checker *k, int name)
{
    return k->validity_overlaps_of[name];
}

void checker_free(struct checker *k)
{
    if (!k)
        return;
    free(k->grants);
    free(k);
}

/* A semaphore is judged as one mutex per slot: the place of a message is
 * its name's slot, name x permits + slot. A mutex's place is its name. -1:
 * a slot out of range (the scenario's check reports it). */
static int place_of(const struct checker *k, const struct chaos_msg *m)
{
    int permits = k->cfg->permits > 1 ? k->cfg->permits : 1;
    int place = m->name * permits + m->slot;
    return m->slot >= 0 && m->slot < permits && place < CHAOS_NAMES_MAX ? place : -1;
}

static struct grant *current(struct checker *k, int client)
{
    return k->current[client] >= 0 ? &k->grants[k->current[client]] : NULL;
}

static void new_grant(struct checker *k, const struct chaos_msg *m)
{
    if (k->n_grants == k->cap_grants) {
        size_t cap = k->cap_grants ? 2 * k->cap_grants : 1024;
        struct grant *bigger = realloc(k->grants, cap * sizeof(*bigger));
        if (!bigger) {
            perror("checker");
            exit(1);
        }
        k->grants = bigger;
        k->cap_grants = cap;
    }
    k->grants[k->n_grants] = (struct grant){.client = m->client, .name = place_of(k, m),
                                            .sem_name = m->name,
                                            .fence = m->fence, .nodes = m->nodes,
                                            .attempt = m->t_ns - m->duration_ns,
                                            .start = m->t_ns, .until = m->until_ns,
                                            .end = INT64_MAX, .shared = m->shared != 0};
    k->current[m->client] = (long)k->n_grants++;
}

static void end_grant(struct checker *k, int client, int64_t t)
{
    struct grant *g = current(k, client);
    if (g && t < g->end)
        g->end = t;
}

/* The fenced store: a write counts only with a token at least the highest
 * one it has seen for that name. */
static void store_write(struct checker *k, int sock, const struct chaos_msg *m)
{
    struct grant *g = current(k, m->client);
    int place = place_of(k, m);
    char accepted = (char)(place >= 0 && m->fence >= k->store[place]);
    if (accepted)
        k->store[place] = m->fence;
    else
        k->live.stale_rejected++;
    if (m->held && g && m->t_ns > g->until)
        k->live.held_after_expiry++;
    if (g) {
        g->write_seq = ++k->writes;
        g->write_accepted = accepted;
    }
    if (send(sock, &accepted, 1, MSG_NOSIGNAL) != 1)
        perror("checker: answer");
}

/* The library's node deadline (dlock__node_deadline()): TTL/20 with
 * several servers, TTL/4 with one, at least 5 ms, at most the command
 * timeout (dlock.h). */
static int64_t node_deadline_ms(const struct chaos_config *cfg)
{
    int64_t cap = cfg->command_timeout_ms > 0 ? cfg->command_timeout_ms : 1000; /* its default */
    int64_t ms = cfg->ttl_ms / (cfg->nodes > 1 ? 20 : 4);
    ms = ms > 5 ? ms : 5;
    return ms < cap ? ms : cap;
}

/* A single attempt (try_only) takes at most a node deadline for the vote,
 * one for the fence write-back (Redlock only) and one for the cleanup of a
 * failure. */
static void note_attempt(struct checker *k, const struct chaos_msg *m)
{
    int64_t rounds = k->cfg->nodes > 1 ? 3 : 2;
    long ms = (long)(m->duration_ns / 1000000);
    if (!k->cfg->try_only)
        return;
    if (ms > k->live.max_attempt_ms)
        k->live.max_attempt_ms = ms;
    k->live.slow_attempts += ms > rounds * node_deadline_ms(k->cfg) + ATTEMPT_SLACK_MS;
}

static const char *const type_names[] = {"grant", "enter", "write", "exit",
                                         "release", "lost",  "failed", "valid"};

void checker_receive(struct checker *k, int sock)
{
    struct chaos_msg m;
    struct grant *g;
    if (recv(sock, &m, sizeof(m), 0) != (ssize_t)sizeof(m) || m.client < 0 ||
        m.client >= CHAOS_CLIENTS_MAX || m.name < 0 || m.name >= CHAOS_NAMES_MAX ||
        m.type < MSG_GRANT || m.type > MSG_VALID)
        return;
    g = current(k, m.client);
    switch (m.type) {
    case MSG_GRANT:
        note_attempt(k, &m);
        if (place_of(k, &m) < 0) {
            k->live.holders_over_limit++; /* a slot outside 0 .. permits - 1 */
            break;
        }
        new_grant(k, &m);
        k->live.degraded_grants += m.nodes != (1u << k->cfg->nodes) - 1;
        break;
    case MSG_ENTER:
        if (g)
            g->enter = m.t_ns;
        break;
    case MSG_WRITE:
        store_write(k, sock, &m);
        break;
    case MSG_EXIT:
        if (g)
            g->exit = m.t_ns;
        break;
    case MSG_RELEASE:
        end_grant(k, m.client, m.t_ns);
        k->live.slow_ops += m.duration_ns >= SLOW_RELEASE_NS;
        k->current[m.client] = -1;
        break;
    case MSG_LOST:
        end_grant(k, m.client, m.t_ns);
        k->live.lost++;
        if (k->n_losses < sizeof(k->losses) / sizeof(k->losses[0]))
            k->losses[k->n_losses++] = m;
        break;
    case MSG_FAILED:
        note_attempt(k, &m);
        k->live.failed_acquires += m.code != DLOCK_EBUSY;
        break;
    case MSG_VALID:
        if (g && m.until_ns > g->until)
            g->until = m.until_ns;
        break;
    }
    if (k->history)
        fprintf(k->history,
                "{\"t\":%lld,\"type\":\"%s\",\"client\":%d,\"name\":%d,\"fence\":%llu,"
                "\"until\":%lld,\"nodes\":%u,\"held\":%d,\"code\":%d,\"duration\":%lld}\n",
                (long long)m.t_ns, type_names[m.type], m.client, m.name,
                (unsigned long long)m.fence, (long long)m.until_ns, m.nodes, m.held, m.code,
                (long long)m.duration_ns);
}

static const char *const fault_names[] = {"client-pause", "client-resume", "node-pause",
                                          "node-resume",  "node-crash",    "node-restart",
                                          "net",          "clock-jump",    "failover"};

void checker_fault(struct checker *k, const struct fault_event *e)
{
    if (k->n_faults < sizeof(k->faults) / sizeof(k->faults[0]))
        k->faults[k->n_faults++] = *e;
    if (k->history)
        fprintf(k->history,
                "{\"t\":%lld,\"type\":\"fault\",\"fault\":\"%s\",\"target\":%d,\"amount\":%lld,"
                "\"data_lost\":%s}\n",
                (long long)e->t_ns, fault_names[e->kind], e->target, e->amount,
                e->data_lost ? "true" : "false");
}

int checker_client_in_section(const struct checker *k, int from)
{
    for (int j = 0; j < k->cfg->clients; j++) {
        int c = (from + j) % k->cfg->clients;
        const struct grant *g = k->current[c] >= 0 ? &k->grants[k->current[c]] : NULL;
        if (g && g->enter && !g->exit)
            return c;
    }
    return -1;
}

int checker_client_waiting(const struct checker *k, int from)
{
    for (int j = 0; j < k->cfg->clients; j++) {
        int c = (from + j) % k->cfg->clients;
        if (k->current[c] < 0)
            return c;
    }
    return -1;
}

long checker_grants(const struct checker *k)
{
    return (long)k->n_grants;
}

/* How late a clock jump may take effect: the shim reads its file every
 * 10 ms and Redis caches the time per event loop. */
#define JUMP_LAG_NS (50 * 1000000LL)
/* After a Sentinel failover the old primary stays a primary until the
 * sentinels reconfigure it, and a client keeps its connection there until
 * it asks them again (at most every second): grants made there up to this
 * long after the failover may be lost with it. Longer is a bug. */
#define SPLIT_BRAIN_NS (2000 * 1000000LL)

/* The crash before fault i, on the same node. */
static const struct fault_event *crash_before(const struct checker *k, size_t i)
{
    int node = k->faults[i].target;
    while (i-- > 0)
        if (k->faults[i].kind == FAULT_NODE_CRASH && k->faults[i].target == node)
            return &k->faults[i];
    return NULL;
}

/* The nodes that may have lost a key set after `set_after` (an attempt
 * began) by `to` (a later grant): a crash after it and a restart without
 * the data before `to` (the crash is recorded after the kill, the restart
 * before the new process exists), or a clock jumping forward after the
 * grant at `granted` (keys expire early). */
static uint32_t nodes_that_lost_data(const struct checker *k, int64_t set_after, int64_t granted,
                                     int64_t to)
{
    uint32_t lost = 0;
    for (size_t i = 0; i < k->n_faults; i++) {
        const struct fault_event *e = &k->faults[i], *crash;
        bool restart = e->kind == FAULT_NODE_RESTART && e->data_lost && e->t_ns < to &&
                       (crash = crash_before(k, i)) && crash->t_ns > set_after;
        bool jump = e->kind == FAULT_CLOCK_JUMP && e->amount > 0 &&
                    e->t_ns > granted - JUMP_LAG_NS && e->t_ns <= to;
        /* Asynchronous replication: a key set before a failover, or on the
         * old primary shortly after it, may not be on the new one. */
        bool failover = e->kind == FAULT_FAILOVER && e->data_lost && e->t_ns <= to &&
                        e->t_ns > set_after - SPLIT_BRAIN_NS;
        if (restart || jump || failover)
            lost |= 1u << e->target;
    }
    return lost;
}

static int popcount(uint32_t x)
{
    int n = 0;
    for (; x; x &= x - 1)
        n++;
    return n;
}

/* A later grant b while a still held. a's majority lay within the nodes
 * that held its key right after the grant (`nodes`) and those that may
 * have lost it since; the model permits b only if b could find a majority
 * among the nodes that do not certainly still hold a's key. */
static bool overlap_permitted(const struct checker *k, const struct grant *a,
                              const struct grant *b)
{
    int n = k->cfg->nodes, quorum = n / 2 + 1;
    uint32_t lost = nodes_that_lost_data(k, a->attempt, a->start, b->start);
    return popcount(a->nodes | lost) >= quorum && popcount(a->nodes & ~lost) <= n - quorum;
}

static int jump_bucket(long long ms)
{
    return ms < 1000 ? 0 : ms < 2000 ? 1 : 2;
}

/* The largest clock jump in (from, to], or 0. */
static long long largest_jump(const struct checker *k, int64_t from, int64_t to)
{
    long long largest = 0;
    for (size_t i = 0; i < k->n_faults; i++) {
        const struct fault_event *e = &k->faults[i];
        if (e->kind == FAULT_CLOCK_JUMP && e->t_ns > from - JUMP_LAG_NS && e->t_ns <= to &&
            e->amount > largest)
            largest = e->amount;
    }
    return largest;
}

/* A failover that lost data between a's attempt (less the split-brain
 * window) and b's start. */
static bool failover_between(const struct checker *k, const struct grant *a,
                             const struct grant *b)
{
    for (size_t i = 0; i < k->n_faults; i++) {
        const struct fault_event *e = &k->faults[i];
        if (e->kind == FAULT_FAILOVER && e->data_lost && e->t_ns > a->attempt - SPLIT_BRAIN_NS &&
            e->t_ns <= b->start)
            return true;
    }
    return false;
}

static int by_start(const void *x, const void *y)
{
    const struct grant *a = x, *b = y;
    if (a->name != b->name)
        return a->name - b->name;
    return (a->start > b->start) - (a->start < b->start);
}

/* A renewed holder paused past its validity must hear of the loss within
 * one renewal interval of resuming (plus scheduling slack). */
static void judge_loss_reports(const struct checker *k, struct verdict *v)
{
    int64_t allowed = (int64_t)k->cfg->ttl_ms / 3 * 1000000 + 250 * 1000000LL;
    for (size_t i = 0; k->cfg->auto_renew && i < k->n_faults; i++) {
        const struct fault_event *e = &k->faults[i];
        int64_t first = INT64_MAX;
        if (e->kind != FAULT_CLIENT_RESUME)
            continue;
        for (size_t j = 0; j < k->n_losses; j++)
            if (k->losses[j].client == e->target && k->losses[j].t_ns >= e->t_ns &&
                k->losses[j].t_ns < first)
                first = k->losses[j].t_ns;
        if (first == INT64_MAX || first - e->t_ns > allowed)
            v->late_loss_reports++;
        if (first != INT64_MAX && (first - e->t_ns) / 1000000 > v->loss_report_max_ms)
            v->loss_report_max_ms = (first - e->t_ns) / 1000000;
    }
}

/* One end of a validity window, for the sweep. */
struct edge {
    int name;
    int64_t t;
    int delta; /* +1 opens, -1 closes */
};

static int by_edge(const void *x, const void *y)
{
    const struct edge *a = x, *b = y;
    if (a->name != b->name)
        return a->name - b->name;
    if (a->t != b->t)
        return (a->t > b->t) - (a->t < b->t);
    return a->delta - b->delta; /* a window that closes as another opens: no overlap */
}

/* Semaphores: how many validity windows of one name are open at once; more
 * than its permits is a bug (one server, no lost data: every window lies
 * within its permit's life on the server, and the server holds at most N). */
static void judge_holders(const struct checker *k, struct verdict *v)
{
    struct edge *edges = calloc(2 * k->n_grants + 1, sizeof(*edges));
    size_t n = 0;
    int open = 0, name = -1;
    if (!edges) {
        perror("checker");
        exit(1);
    }
    for (size_t i = 0; i < k->n_grants; i++) {
        const struct grant *g = &k->grants[i];
        edges[n++] = (struct edge){g->sem_name, g->start, +1};
        edges[n++] = (struct edge){g->sem_name, g->end < g->until ? g->end : g->until, -1};
    }
    qsort(edges, n, sizeof(*edges), by_edge);
    for (size_t i = 0; i < n; i++) {
        if (edges[i].name != name) {
            name = edges[i].name;
            open = 0;
        }
        open += edges[i].delta;
        v->max_holders = open > v->max_holders ? open : v->max_holders;
        v->holders_over_limit += edges[i].delta > 0 && open > k->cfg->permits;
    }
    free(edges);
}

/* Was `client` stopped at some time in [from, to]? */
static bool paused_within(const struct checker *k, int client, int64_t from, int64_t to)
{
    int64_t paused = -1;
    for (size_t i = 0; i < k->n_faults; i++) {
        const struct fault_event *e = &k->faults[i];
        if (e->target != client || e->t_ns > to)
            continue;
        if (e->kind == FAULT_CLIENT_PAUSE)
            paused = e->t_ns;
        else if (e->kind == FAULT_CLIENT_RESUME && paused >= 0 && e->t_ns >= from)
            return true;
        else if (e->kind == FAULT_CLIENT_RESUME)
            paused = -1;
    }
    return paused >= 0; /* still stopped at `to` */
}

/* Fair runs, grants of one name sorted by start. FIFO: no grant b goes
 * before a grant a whose waiter asked clearly earlier, unless that waiter
 * was stopped meanwhile (its lease may have run out: it lost its place).
 * A client's first call is not judged: it joins the queue only once it
 * connected, which its ask time does not show. Bounded stall: after a
 * release, the next grant comes within a presence lease and a renewal
 * period (a dead or stopped head), plus slack. */
static void judge_fair(const struct checker *k, struct verdict *v)
{
    int64_t lease = k->cfg->lease_ms ? k->cfg->lease_ms : DLOCK_LEASE_DEFAULT_MS;
    int64_t first[CHAOS_CLIENTS_MAX];
    for (int c = 0; c < CHAOS_CLIENTS_MAX; c++)
        first[c] = INT64_MAX;
    for (size_t i = 0; i < k->n_grants; i++) {
        const struct grant *g = &k->grants[i];
        first[g->client] = g->start < first[g->client] ? g->start : first[g->client];
    }
    for (size_t i = 0; i < k->n_grants; i++) {
        const struct grant *a = &k->grants[i];
        for (size_t j = i; a->start != first[a->client] && j-- > 0 &&
                           k->grants[j].name == a->name && k->grants[j].start > a->attempt;) {
            const struct grant *b = &k->grants[j];
            if (b->attempt > a->attempt + FIFO_SLACK_NS &&
                !paused_within(k, a->client, a->attempt, a->start))
                v->fifo_violations++;
        }
        if (i > 0 && k->grants[i - 1].name == a->name && k->grants[i - 1].end < k->grants[i - 1].until) {
            long gap = (long)((a->start - k->grants[i - 1].end) / 1000000);
            v->max_stall_ms = gap > v->max_stall_ms ? gap : v->max_stall_ms;
            v->stalls += gap > lease + lease / 3 + STALL_SLACK_MS;
        }
    }
}

void checker_judge(struct checker *k, struct verdict *v)
{
    int64_t lost;
    *v = k->live;
    judge_loss_reports(k, v);
    for (size_t i = 0; i < k->n_faults; i++)
        if (k->faults[i].kind == FAULT_CLOCK_JUMP)
            v->jumps[jump_bucket(k->faults[i].amount)]++;
    v->grants = (long)k->n_grants;
    lost = last_data_loss(k);
    if (k->cfg->permits > 1)
        judge_holders(k, v);
    qsort(k->grants, k->n_grants, sizeof(*k->grants), by_start);
    if (k->cfg->fair)
        judge_fair(k, v);
    for (size_t i = 0; i < k->n_grants; i++) {
        const struct grant *a = &k->grants[i];
        int64_t a_end = a->end < a->until ? a->end : a->until;
        const struct grant *highest = NULL;
        uint64_t exclusive = 0;
        for (size_t h = i; h-- > 0 && k->grants[h].name == a->name;) {
            const struct grant *g = &k->grants[h];
            if (!highest || g->fence > highest->fence)
                highest = g;
            exclusive = !g->shared && g->fence > exclusive ? g->fence : exclusive;
        }
        /* A shared holder's fence is its exclusive epoch's: never below the
         * last exclusive holder's, and the same as the other shared
         * holders' of that epoch, except where docs/shared.md says an
         * epoch can split under Redlock (a write-back that reached only
         * some servers, a server that lost its data): counted apart. */
        if (a->shared) {
            v->fence_regressions += exclusive > a->fence;
            v->shared_fence_splits += highest && highest->fence > a->fence;
        } else if (highest && highest->fence >= a->fence && failover_between(k, highest, a)) {
            v->failover_fence_slips++;
        } else if (highest && highest->fence >= a->fence) {
            v->fence_regressions++;
        }
        for (size_t j = i + 1; j < k->n_grants && k->grants[j].name == a->name; j++) {
            const struct grant *b = &k->grants[j];
            if (a->shared && b->shared)
                continue; /* shared holders together: what they are for */
            if (b->start < a_end) {
                v->validity_overlaps++;
                k->validity_overlaps_of[a->sem_name]++;
                if (overlap_permitted(k, a, b)) {
                    long long jump = largest_jump(k, a->start, b->start);
                    v->permitted_overlaps++;
                    if (jump > 0)
                        v->jump_overlaps[jump_bucket(jump)]++;
                } else
                    v->bug_overlaps++;
            }
            if (a->enter && b->enter && b->enter < (a->exit ? a->exit : INT64_MAX) &&
                a->client != b->client) {
                v->section_overlaps++;
                if (k->n_overlaps < sizeof(k->overlaps) / sizeof(k->overlaps[0]))
                    k->overlaps[k->n_overlaps++] = (struct chaos_overlap){
                        a->sem_name, a->fence, b->fence, audit_can_know(k, a, b, lost)};
            }
            /* The store took a's write after a newer holder had written: in
             * the order the store took them, not their clients' clocks (two
             * holders of a lost lock may write a microsecond apart). */
            if (a->write_accepted && b->write_accepted && b->write_seq < a->write_seq &&
                failover_between(k, a, b))
                v->failover_fence_slips++;
            else if (a->write_accepted && b->write_accepted && b->write_seq < a->write_seq)
                v->stale_accepted++;
        }
    }
}

/* The audit's judge. See audit_judge.h and docs/operations.md. */
#include "audit_judge.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SERVERS_MAX 16

static bool parse_int(const char *s, int64_t *out)
{
    char *end;
    long long v;
    if (!*s) {
        *out = -1;
        return true;
    }
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno || *end)
        return false;
    *out = v;
    return true;
}

static void copy(char *dst, size_t len, const char *src)
{
    size_t n = strlen(src);
    n = n < len - 1 ? n : len - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

bool dlock__audit_entry_parse(dlock__audit_entry *e, size_t server, const char *const *fields,
                              size_t n)
{
    int64_t fence = -1, pid = -1;
    bool ok = true;
    memset(e, 0, sizeof(*e));
    e->server = server;
    e->time_us = e->ttl_ms = e->held_ms = e->left_ms = -1;
    for (size_t i = 0; ok && i + 1 < n; i += 2) {
        const char *k = fields[i], *v = fields[i + 1];
        if (strcmp(k, "event") == 0)
            copy(e->event, sizeof(e->event), v);
        else if (strcmp(k, "token") == 0)
            copy(e->token, sizeof(e->token), v);
        else if (strcmp(k, "host") == 0)
            copy(e->host, sizeof(e->host), v);
        else if (strcmp(k, "reason") == 0)
            copy(e->reason, sizeof(e->reason), v);
        else if (strcmp(k, "kind") == 0)
            copy(e->kind, sizeof(e->kind), v);
        else if (strcmp(k, "fence") == 0)
            ok = parse_int(v, &fence);
        else if (strcmp(k, "pid") == 0)
            ok = parse_int(v, &pid);
        else if (strcmp(k, "time") == 0)
            ok = parse_int(v, &e->time_us);
        else if (strcmp(k, "ttl") == 0)
            ok = parse_int(v, &e->ttl_ms);
        else if (strcmp(k, "held") == 0)
            ok = parse_int(v, &e->held_ms);
        else if (strcmp(k, "left") == 0)
            ok = parse_int(v, &e->left_ms);
    }
    e->fence = fence > 0 ? (uint64_t)fence : 0;
    e->pid = pid > 0 ? (long)pid : 0;
    return ok && e->event[0] && e->token[0] && e->time_us > 0;
}

int64_t dlock__audit_allowance_us(int64_t ttl_ms)
{
    return (ttl_ms > 0 ? ttl_ms * 10 : 0) + 2000;
}

static bool is_grant(const char *event)
{
    return strcmp(event, "grant") == 0 || strcmp(event, "permit") == 0 ||
           strcmp(event, "shared") == 0;
}

/* What the entries of one token say, before it is a hold. */
/* Per server, the grant that stands: an acquire's retries send one token,
 * so an attempt granted on a few servers and taken back by its cleanup
 * comes before the grant that counted. */
struct tally {
    int64_t granted[SERVERS_MAX]; /* per server: its standing grant's time; 0: none */
    int64_t extended[SERVERS_MAX]; /* per server: its first extend's time; 0: none */
    int64_t key_end[SERVERS_MAX]; /* per server: last grant/extend + TTL; 0: none */
    bool used;          /* extended, or ended otherwise than by a cleanup */
    bool cleaned;       /* a failed attempt's cleanup took it back */
    size_t released, expired;
    /* Whether the hold is exclusive, by the best evidence seen (every
     * entry of that rank agreeing): the entries that began or kept it
     * (grants, extends, repairs), else an end of ours (not "expired"),
     * else any end. An adopted handle's release tries one kind, then
     * another, each writing an end. */
    enum { KIND_UNSAID, KIND_BY_AN_END, KIND_BY_OUR_END, KIND_BY_A_GRANT } kind_rank;
    bool exclusive;
    int64_t held_start; /* what an end's held time says the start was; 0: none */
    int64_t left_end;   /* what an end's left time says the validity's end was; 0: none */
    uint64_t client_fence; /* what an extend or an end says the client was given */
};

static void note_kind(struct tally *t, int rank, bool exclusive)
{
    if (rank > (int)t->kind_rank) {
        t->kind_rank = rank;
        t->exclusive = exclusive;
    } else if (rank == (int)t->kind_rank) {
        t->exclusive &= exclusive;
    }
}

static void take_entry(dlock_audit_hold *h, struct tally *t, const dlock__audit_entry *e)
{
    size_t s = e->server < SERVERS_MAX ? e->server : SERVERS_MAX - 1;
    bool ends = strcmp(e->event, "release") == 0 || strcmp(e->event, "loss") == 0;
    /* With several servers a grant's own fence may be above the one its
     * client took (the largest of a majority): the client's wins. */
    if (is_grant(e->event))
        h->fence = e->fence > h->fence ? e->fence : h->fence;
    else if (e->fence)
        t->client_fence = e->fence;
    if (e->host[0] && (!h->host[0] || is_grant(e->event))) {
        copy(h->host, sizeof(h->host), e->host);
        h->pid = e->pid;
    }
    if (is_grant(e->event) || strcmp(e->event, "repair") == 0) {
        /* A grant after the standing one's key expired (a fair lock handed
         * to a waiter that did not take it, then taken by it) begins anew. */
        if (!t->granted[s] || (t->key_end[s] && e->time_us >= t->key_end[s]))
            t->granted[s] = e->time_us;
        note_kind(t, KIND_BY_A_GRANT,
                  strcmp(e->event, "grant") == 0 || strcmp(e->event, "repair") == 0);
    }
    if (e->kind[0])
        note_kind(t, !ends                                ? KIND_BY_A_GRANT
                     : strcmp(e->reason, "expired") != 0 ? KIND_BY_OUR_END
                                                          : KIND_BY_AN_END,
                  strcmp(e->kind, "grant") == 0);
    if (e->ttl_ms > 0) {
        t->key_end[s] = e->time_us + e->ttl_ms * 1000;
        h->ttl_ms = (int)e->ttl_ms;
    }
    if (strcmp(e->event, "extend") == 0 && !t->extended[s])
        t->extended[s] = e->time_us;
    t->used |= strcmp(e->event, "extend") == 0;
    if (!ends)
        return;
    if (strcmp(e->reason, "cleanup") == 0) {
        t->cleaned = true;
        t->granted[s] = t->key_end[s] = 0;
        return;
    }
    t->used = true;
    if (!h->end_us || e->time_us < h->end_us) {
        h->end_us = e->time_us;
        if (e->held_ms >= 0)
            t->held_start = e->time_us - e->held_ms * 1000;
        if (e->left_ms != -1)
            t->left_end = e->time_us + e->left_ms * 1000;
    }
    if (strcmp(e->event, "loss") == 0)
        h->end = DLOCK_AUDIT_LOST;
    else if (strcmp(e->reason, "expired") == 0)
        t->expired++;
    else
        t->released++;
}

static int cmp_desc(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x < y) - (x > y);
}

/* The k-th largest (from 1) of v[0..SERVERS_MAX), 0 among them meaning
 * none; 0 if fewer than k. */
static int64_t kth_largest(const int64_t *v, size_t k)
{
    int64_t sorted[SERVERS_MAX];
    memcpy(sorted, v, sizeof(sorted));
    qsort(sorted, SERVERS_MAX, sizeof(sorted[0]), cmp_desc);
    return sorted[k - 1];
}

/* A hold and whether its start is known. With several servers, the start
 * of a hold whose grant fewer than a majority kept (the others lost their
 * data) is not: its end's held time counts from its client's attempt,
 * before the servers granted, and the grant seen on one server may have
 * come before the others let the last holder go. No overlap is judged by
 * such a start; the hold is a no-majority finding instead. */
struct judged {
    dlock_audit_hold h;
    bool start_known;
};

/* The hold from its tally: how it ended, when its validity did (on a
 * majority's clocks, else by its client's word), when it began. */
static void settle(struct judged *j, const struct tally *t, size_t servers)
{
    dlock_audit_hold *h = &j->h;
    size_t quorum = servers / 2 + 1;
    int64_t began[SERVERS_MAX];
    bool granted = false;
    /* Where a hold's grant is older than the entries read (--since), it
     * began, as far as they tell, at its first extend there. */
    for (size_t s = 0; s < SERVERS_MAX; s++) {
        granted |= t->granted[s] != 0;
        began[s] = t->granted[s] ? t->granted[s] : t->extended[s];
    }
    for (size_t s = 0; s < SERVERS_MAX; s++) {
        h->servers += began[s] != 0;
        if (began[s] && (!h->start_us || began[s] < h->start_us))
            h->start_us = began[s];
    }
    /* A majority's: the hold began when the last of them granted, and its
     * validity ended when the key left the first of them. */
    if (h->servers >= quorum) {
        int64_t late[SERVERS_MAX];
        for (size_t s = 0; s < SERVERS_MAX; s++)
            late[s] = began[s] ? INT64_MAX - began[s] : 0;
        h->start_us = INT64_MAX - kth_largest(late, quorum);
    }
    h->exclusive = t->kind_rank == KIND_UNSAID || t->exclusive;
    h->fence = t->client_fence ? t->client_fence : h->fence;
    h->valid_us = h->servers >= quorum ? kth_largest(t->key_end, quorum) : t->left_end;
    if (h->end != DLOCK_AUDIT_LOST && (t->released || t->expired))
        h->end = t->released >= quorum || !t->expired ? DLOCK_AUDIT_RELEASED : DLOCK_AUDIT_EXPIRED;
    j->start_known = servers == 1 || h->servers >= quorum;
    /* Its client's word is better than a first extend or a minority's. */
    if ((h->servers < quorum || !granted) && t->held_start)
        h->start_us = t->held_start;
    if (!h->start_us)
        h->start_us = h->end_us;
}

/* A failed attempt (granted on too few servers, or taken back), never a
 * hold its client used: no finding is about it. */
static bool attempt_only(const dlock_audit_hold *h, const struct tally *t, size_t servers)
{
    return !t->used && (t->cleaned || h->servers < servers / 2 + 1);
}

/* Where a hold's window ends: its release or loss, or its validity,
 * whichever is first; 0 when neither is known. */
static int64_t window_end(const dlock_audit_hold *h)
{
    if (h->end_us && h->valid_us)
        return h->end_us < h->valid_us ? h->end_us : h->valid_us;
    return h->end_us ? h->end_us : h->valid_us;
}

static int cmp_token(const void *a, const void *b)
{
    const dlock__audit_entry *x = *(const dlock__audit_entry *const *)a;
    const dlock__audit_entry *y = *(const dlock__audit_entry *const *)b;
    int c = strcmp(x->token, y->token);
    return c ? c : (x->time_us > y->time_us) - (x->time_us < y->time_us);
}

static int cmp_start(const void *a, const void *b)
{
    const dlock_audit_hold *x = &((const struct judged *)a)->h;
    const dlock_audit_hold *y = &((const struct judged *)b)->h;
    return (x->start_us > y->start_us) - (x->start_us < y->start_us);
}

static int cmp_finding(const void *a, const void *b)
{
    const dlock_audit_finding *x = a, *y = b;
    return (x->at_us > y->at_us) - (x->at_us < y->at_us);
}

static void add(dlock__audit_verdict *v, dlock_audit_kind kind, size_t a, size_t b, int64_t at,
                int64_t amount)
{
    dlock_audit_finding *f = &v->findings[v->n_findings++];
    f->kind = kind;
    f->a = a;
    f->b = b;
    f->at_us = at;
    f->amount_us = amount;
}

/* Hold j against `a`, the earlier hold whose window ends last: an overlap
 * if j began before that end, less a's drift allowance. */
static void check_overlap(dlock__audit_verdict *v, size_t a, size_t j)
{
    int64_t a_end = window_end(&v->holds[a]);
    int64_t start = v->holds[j].start_us;
    if (a_end && start < a_end - dlock__audit_allowance_us(v->holds[a].ttl_ms))
        add(v, DLOCK_AUDIT_OVERLAP, a, j, start, a_end - start);
}

static void keep_latest(const dlock__audit_verdict *v, size_t *latest, size_t j)
{
    if (*latest == SIZE_MAX || window_end(&v->holds[j]) > window_end(&v->holds[*latest]))
        *latest = j;
}

/* Did the hold end after its validity? A release that found the key gone
 * says so unless it came before the validity's end (the key went early, a
 * failover say: whoever took the name then overlaps it), and does with no
 * validity known (its grant is not among the entries read); another end
 * says so once past the validity and its drift allowance. */
static bool past_validity(const dlock_audit_hold *h)
{
    if (h->end == DLOCK_AUDIT_OPEN)
        return false;
    /* An exclusive key gone early is found as the overlap of whoever took
     * the name; among permits and shared holders no overlap is judged. */
    if (h->end == DLOCK_AUDIT_EXPIRED)
        return !h->exclusive || !h->valid_us || h->end_us > h->valid_us;
    return h->valid_us && h->end_us > h->valid_us + dlock__audit_allowance_us(h->ttl_ms);
}

/* The holds in order of their start, each against the earlier ones: an
 * exclusive hold against every earlier hold, a shared one (or a permit)
 * against the exclusive ones only; its fence against the largest before. */
static void find(dlock__audit_verdict *v, const struct judged *js, size_t servers)
{
    size_t any = SIZE_MAX, exclusive = SIZE_MAX, top = SIZE_MAX;
    for (size_t j = 0; j < v->n_holds; j++) {
        const dlock_audit_hold *h = &v->holds[j];
        size_t against = h->exclusive ? any : exclusive;
        if (servers > 1 && h->servers < servers / 2 + 1)
            add(v, DLOCK_AUDIT_NO_MAJORITY, j, j, h->start_us, 0);
        if (past_validity(h))
            add(v, DLOCK_AUDIT_PAST_VALIDITY, j, j, h->end_us,
                h->valid_us && h->end_us > h->valid_us ? h->end_us - h->valid_us : 0);
        if (against != SIZE_MAX && js[j].start_known)
            check_overlap(v, against, j);
        if (h->exclusive && h->fence && top != SIZE_MAX && h->fence < v->holds[top].fence)
            add(v, DLOCK_AUDIT_FENCE_BACK, top, j, h->start_us,
                (int64_t)(v->holds[top].fence - h->fence));
        if (h->exclusive && h->fence && (top == SIZE_MAX || h->fence > v->holds[top].fence))
            top = j;
        keep_latest(v, &any, j);
        if (h->exclusive)
            keep_latest(v, &exclusive, j);
    }
    qsort(v->findings, v->n_findings, sizeof(*v->findings), cmp_finding);
}

/* Groups the entries by token into holds (and their tallies); returns how
 * many, or DLOCK_ENOMEM. */
static long group(struct judged **out, struct tally **tallies, const dlock__audit_entry *entries,
                  size_t n, size_t servers)
{
    const dlock__audit_entry **order = malloc((n ? n : 1) * sizeof(const dlock__audit_entry *));
    struct tally *t = calloc(n ? n : 1, sizeof(*t));
    struct judged *js = calloc(n ? n : 1, sizeof(*js));
    size_t holds = 0;
    if (!order || !t || !js) {
        free(order);
        free(t);
        free(js);
        return DLOCK_ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        order[i] = &entries[i];
    qsort(order, n, sizeof(const dlock__audit_entry *), cmp_token);
    for (size_t i = 0; i < n; i++) {
        dlock_audit_hold *h = &js[holds].h;
        if (i == 0 || strcmp(order[i]->token, order[i - 1]->token) != 0) {
            copy(h->token, sizeof(h->token), order[i]->token);
            holds++;
        }
        take_entry(&js[holds - 1].h, &t[holds - 1], order[i]);
    }
    for (size_t i = 0; i < holds; i++)
        settle(&js[i], &t[i], servers);
    free(order);
    *out = js;
    *tallies = t;
    return (long)holds;
}

int dlock__audit_judge(dlock__audit_verdict *v, const dlock__audit_entry *entries, size_t n,
                       size_t servers)
{
    struct tally *t = NULL;
    struct judged *js = NULL;
    size_t kept = 0;
    long holds;
    memset(v, 0, sizeof(*v));
    servers = servers < 1 ? 1 : servers > SERVERS_MAX ? SERVERS_MAX : servers;
    holds = group(&js, &t, entries, n, servers);
    if (holds < 0)
        return (int)holds;
    /* Failed attempts are no holds: they go. */
    for (size_t i = 0; i < (size_t)holds; i++)
        if (!attempt_only(&js[i].h, &t[i], servers))
            js[kept++] = js[i];
    free(t);
    qsort(js, kept, sizeof(*js), cmp_start);
    v->holds = calloc(kept ? kept : 1, sizeof(*v->holds));
    v->findings = calloc(kept ? 4 * kept : 1, sizeof(*v->findings));
    if (!v->holds || !v->findings) {
        free(js);
        dlock__audit_verdict_clear(v);
        return DLOCK_ENOMEM;
    }
    for (size_t i = 0; i < kept; i++)
        v->holds[i] = js[i].h;
    v->n_holds = kept;
    find(v, js, servers);
    free(js);
    return 0;
}

void dlock__audit_verdict_clear(dlock__audit_verdict *v)
{
    free(v->holds);
    free(v->findings);
    memset(v, 0, sizeof(*v));
}

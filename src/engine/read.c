/* Reading state from N servers. See read.h. */
#include "read.h"

#include "clock.h"
#include "resp.h"

#include <string.h>

#define COMMAND_WORDS_MAX 16

void dlock__read_tally_init(dlock__read_tally *t, size_t n)
{
    memset(t, 0, sizeof(*t));
    t->n = n;
    t->quorum = n / 2 + 1;
}

void dlock__read_tally_add(dlock__read_tally *t, int part)
{
    if (part == DLOCK__READ_YES) {
        t->yes++;
    } else if (part == DLOCK__READ_NO) {
        t->no++;
    } else if (part == DLOCK__READ_LATE) {
        t->late++;
    } else {
        t->failed++;
        t->error = t->error && t->error != part ? DLOCK_ENOQUORUM : part;
    }
}

/* Several servers that cannot be reached are no majority; a failure that
 * all of them report (a wrong password, a hash under the name) is that
 * failure. */
int dlock__read_verdict(const dlock__read_tally *t)
{
    if (t->yes + t->no >= t->quorum)
        return 0;
    if (!t->error || (t->n > 1 && (t->error == DLOCK_ECONN || t->error == DLOCK_ETIMEDOUT)))
        return DLOCK_ENOQUORUM;
    return t->error;
}

bool dlock__read_agreed(const dlock__read_tally *t)
{
    return t->yes >= t->quorum;
}

/* Server i's part from its replies so far: they come in order, so it has
 * answered once its last call has. */
static int part_of(const dlock__read *rd, size_t i)
{
    for (size_t j = 0; j < rd->k; j++) {
        int status = rd->results[j * rd->n + i].status;
        if (status < 0)
            return status;
        if (status == DLOCK__PENDING)
            return DLOCK__READ_LATE;
    }
    return rd->judge ? rd->judge(rd, i, rd->ctx) : DLOCK__READ_YES;
}

static void count(dlock__read *rd)
{
    dlock__read_tally_init(&rd->tally, rd->n);
    for (size_t i = 0; i < rd->n; i++) {
        rd->parts[i] = part_of(rd, i);
        dlock__read_tally_add(&rd->tally, rd->parts[i]);
    }
}

struct progress {
    dlock__read *rd;
    int64_t start_ns, known_ns; /* known_ns: 0 until the majority's answer is */
};

/* The fan-out's `enough` for a majority read: every server has answered,
 * or so many failed that no majority will. Once a majority answered and
 * either said yes or so many said no that a majority never will, the
 * answer is known: the others get as long again as that took. */
static bool majority_known(const dlock__node_result *results, size_t n, size_t k,
                           int64_t *deadline_ns, void *ctx)
{
    struct progress *p = ctx;
    const dlock__read_tally *t = &p->rd->tally;
    int64_t grace;
    (void)results;
    (void)n;
    (void)k;
    count(p->rd); /* the servers still to answer count as late */
    if (t->late == 0 || t->failed > t->n - t->quorum)
        return true;
    if (t->yes + t->no < t->quorum || (t->yes < t->quorum && t->no <= t->n - t->quorum))
        return false;
    if (!p->known_ns)
        p->known_ns = dlock__now_ns();
    grace = p->known_ns - p->start_ns > DLOCK__NS_PER_MS ? p->known_ns - p->start_ns
                                                          : DLOCK__NS_PER_MS;
    if (p->known_ns + grace < *deadline_ns)
        *deadline_ns = p->known_ns + grace;
    return false;
}

int dlock__read_calls(dlock__read *rd, dlock__call *const *calls, size_t k)
{
    struct progress p = {rd, dlock__now_ns(), 0};
    if (k == 0 || k * rd->n > DLOCK__READ_RESULTS_MAX || (rd->majority && k != 1))
        return DLOCK_EINVAL;
    rd->k = k;
    dlock__fanout_batch(rd->conns, rd->n, calls, k, rd->deadline_ns, rd->results,
                        rd->majority ? majority_known : NULL, &p);
    count(rd); /* again: the redirects that were followed changed replies */
    return 0;
}

int dlock__read_script(dlock__read *rd, enum dlock__script_id id, int nkeys,
                       const char *const *keys)
{
    dlock__script_call sc;
    dlock__call *call = &sc.call;
    int rc = dlock__script_encode(&sc, id, nkeys, keys, 0, NULL);
    if (rc < 0)
        return rc;
    rc = dlock__read_calls(rd, &call, 1);
    dlock__script_call_free(&sc);
    return rc;
}

int dlock__read_command(dlock__read *rd, int slot, int argc, const char *const *argv)
{
    size_t lens[COMMAND_WORDS_MAX];
    dlock__call call = {.slot = slot}, *calls[] = {&call};
    long long len;
    int rc;
    if (argc > COMMAND_WORDS_MAX)
        return DLOCK_EINVAL;
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    len = dlock__command_format(&call.cmd, argc, (const char **)argv, lens);
    if (len < 0)
        return (int)len;
    call.len = (size_t)len;
    rc = dlock__read_calls(rd, calls, 1);
    dlock__command_free(call.cmd);
    return rc;
}

void dlock__read_clear(dlock__read *rd)
{
    dlock__results_clear(rd->results, rd->k * rd->n);
}

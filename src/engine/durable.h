/* Durability guards around the lock scripts, pipelined with them on each
 * node's connection (see docs/durability.md):
 *
 * - the restart rule's check in front of an acquire: INFO server, INFO
 *   replication, TIME and the server's marker key, so that a node that lost
 *   its data less than the restart delay ago is no vote;
 * - WAIT after a batch of grants or extends, so that a write fewer than the
 *   asked number of replicas acknowledged is no vote either.
 *
 * A guard lays out one batch: [check...] [script...] [WAIT]. What the
 * guard's replies say about a node's votes is its gate. */
#ifndef DLOCK_DURABLE_H
#define DLOCK_DURABLE_H

#include "lane.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One key per server, outside every lock's keys: "run_id replid ms". On a
 * cluster, one per master: the first of DLOCK__MARKER_KEY,
 * DLOCK__MARKER_KEY "{1}", "{2}", ... whose slot that master owns (with
 * several endpoints, the first that does on each of them). */
#define DLOCK__MARKER_KEY "dlock:restart-marker"
#define DLOCK__MARKER_KEY_MAX 48

enum { DLOCK__CHECK_CALLS = 4 }; /* INFO server, INFO replication, TIME, GET marker */

typedef struct dlock__guard {
    size_t before; /* calls in front of the scripts: 0 or DLOCK__CHECK_CALLS */
    size_t k;      /* the scripts' calls */
    bool wait;     /* a WAIT follows them */
    int replicas;
    int64_t restart_delay_ms;
    int64_t wait_ms; /* the WAIT's timeout */
    dlock__call check[DLOCK__CHECK_CALLS];
    char marker[DLOCK__MARKER_KEY_MAX]; /* the marker's key, "" when none fits */
    int marker_slot;
    dlock__call wait_call;
    /* Each node's dlock__route_reroutes() before the batch, and whether
     * they grew during it (dlock__guard_rerouted()). */
    unsigned reroutes[DLOCK__NODES_MAX];
    bool rerouted[DLOCK__NODES_MAX];
    dlock__call **calls; /* the whole batch, n_calls long */
    size_t n_calls;
} dlock__guard;

enum {
    DLOCK__GUARD_CHECK = 1, /* the restart check, if the client has a delay */
    DLOCK__GUARD_WAIT = 2,  /* WAIT, if the client asks for replicas */
};

/* Lays out the batch around scripts[0..k) for the n connections `conns`:
 * what `what` (DLOCK__GUARD_*) asks for and the client's options enable.
 * The check goes where the first script goes (with no script: where the
 * connections lead now) and reads that server's marker; to choose the
 * marker, each connection is made ready for the first call first
 * (dlock__route_prepare()). The WAIT's timeout is the time left until
 * `deadline_ns`, never 0 (WAIT 0 blocks for ever). Returns 0, DLOCK_ENOMEM,
 * or DLOCK_EINVAL when no marker key lives with the grant's server on
 * every cluster endpoint (durable.h's candidates ran out). */
int dlock__guard_init(dlock__guard *g, const dlock_client *c, dlock__conn *conns, size_t n,
                      unsigned what, dlock__call *const *scripts, size_t k, int64_t deadline_ns);

/* After the batch: notes the nodes whose calls a cluster or the sentinels
 * sent again elsewhere (MOVED, ASK, a new primary). Their check and WAIT
 * may have been answered by another server than the one that ran the
 * script, so they say nothing: such a node's yes fails (DLOCK_ESERVER).
 * Returns whether there was one. */
bool dlock__guard_rerouted(dlock__guard *g, const dlock__conn *conns, size_t n);

/* How many of the calls about slots[0..k) one guard can cover: the leading
 * ones whose calls go where the first one's go, on every node, when the
 * client asks for replicas (WAIT answers for the one server it reaches);
 * all k otherwise. At least 1 when k > 0. */
size_t dlock__guard_span(const dlock_client *c, const dlock__conn *conns, const int *slots,
                         size_t k);
void dlock__guard_free(dlock__guard *g);

enum dlock__gate_kind {
    DLOCK__GATE_OPEN,       /* the node's votes count */
    DLOCK__GATE_PENDING,    /* a reply of the guard is still to come */
    DLOCK__GATE_RESTARTING, /* it lost its data recently: it grants nothing */
    DLOCK__GATE_UNACKED,    /* too few replicas acknowledged: its yes fails */
    DLOCK__GATE_FAILED,     /* a check or the WAIT failed: its yes fails */
};

typedef struct dlock__gate {
    enum dlock__gate_kind kind;
    int error;            /* FAILED: the code; UNACKED: DLOCK_ENOREPLICAS */
    int64_t remaining_ms; /* RESTARTING: what is left of the delay */
    long long acked;      /* UNACKED: how many replicas confirmed */
    bool mark;            /* the marker is missing or names another server */
    bool rerouted;        /* FAILED: see dlock__guard_rerouted() */
} dlock__gate;

/* The gate of node `i` from the batch's results[call * n + i]. */
dlock__gate dlock__guard_gate(const dlock__guard *g, const dlock__node_result *results, size_t n,
                              size_t i);

/* After an acquire's batch: writes the marker (the server's identity and
 * TIME) on every node whose gate asked for it, which starts its delay. One
 * round trip per such node, up to `deadline_ns`; failures are ignored (the
 * next attempt tries again, and the node stays no vote meanwhile). */
void dlock__guard_mark(const dlock__guard *g, dlock__lane *lane, const dlock__node_result *results,
                       size_t n, int64_t deadline_ns);

/* Closes the connection of every node whose WAIT has not answered: the
 * server still blocks it there, and every command sent behind it (the
 * cleanup of the grant it was to confirm) would wait as long. */
void dlock__guard_drop_blocked(const dlock__guard *g, dlock__lane *lane,
                               const dlock__node_result *results, size_t n);

/* Whether some node is in its restart delay. */
bool dlock__guard_restarting(const dlock__guard *g, const dlock__node_result *results, size_t n);

/* Appends to the lane's message why the guard took nodes' votes away. */
void dlock__guard_explain(const dlock__guard *g, dlock__lane *lane,
                          const dlock__node_result *results, size_t n);

/* What the restart rule concludes from one server's answers: the rest of
 * the delay in ms (0: it may grant). `uptime_s` < 0: unknown (no INFO);
 * `marker` NULL: missing; identities NULL: unknown. Sets *mark when the
 * marker must be written again. Pure: for the unit tests. */
int64_t dlock__restart_remaining(int64_t delay_ms, long long uptime_s, const char *run_id,
                                 const char *replid, int64_t now_ms, const char *marker,
                                 bool *mark);

#endif

/* Fan-out: one call (or a pipelined batch of calls) to N connections at
 * once, replies collected with poll() until each answered, its deadline
 * passed, or the caller has enough. N = 1 is the single-instance case: one
 * code path for one node and for Redlock. It carries bytes and a fallback;
 * what the replies mean is the caller's business. */
#ifndef DLOCK_FANOUT_H
#define DLOCK_FANOUT_H

#include "conn.h"
#include "dlock.h"
#include "stats.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DLOCK__NODES_MAX DLOCK_NODES_MAX
#define DLOCK__BATCH_MAX 128 /* calls in one pipelined batch */

typedef struct dlock__call {
    char *cmd; /* usually EVALSHA */
    size_t len;
    /* Sent once if `cmd` gets NOSCRIPT (EVAL); encoded on first need by
     * encode_fallback, which may be NULL (no fallback). */
    char *fallback;
    size_t fallback_len;
    int (*encode_fallback)(struct dlock__call *call);
    int slot; /* the cluster hash slot of the call's keys; -1: it has none */
    /* A WAIT: its reply answers for the writes of the calls before it in
     * the batch. If one of them is re-sent as EVAL (after the WAIT went
     * out), the WAIT's first reply is dropped and the WAIT sent again. */
    bool covers_previous;
    /* A write every node should get even once the replies decided (a
     * release, a cleanup): the fan-out stays, within its deadline and for
     * at most 20 ms (or as long again as the decision took), until each
     * node it had to reconnect to has the call (dlock__conn_delivered), so
     * that no server keeps a key because its connection was new. */
    bool deliver;
    /* A call whose script reads a key named as its first key as absent
     * (scripts.h): a node of a migrating slot answers TRYAGAIN while it
     * lacks some of the keys a call names, even keys that exist nowhere.
     * Then each of its `nkeys` keys is asked for on its own (EXISTS,
     * which an ASK takes to where the key is) and the call goes again
     * with name_absent() naming the absent ones as the first (it answers
     * nonzero where that cannot be done), for that node, and is named as
     * given after (name_absent(call, NULL)). NULL: the call goes as it
     * is. */
    const char *const *keys;
    size_t nkeys;
    int (*name_absent)(struct dlock__call *call, const bool *absent);
} dlock__call;

enum { DLOCK__PENDING = 0, DLOCK__REPLIED = 1 };

typedef struct dlock__node_result {
    dlock__reply *reply; /* owned when REPLIED; may be an error reply */
    int status;          /* DLOCK__REPLIED, DLOCK__PENDING (not waited for) or a code */
    bool sent;           /* the call reached the node's socket: it may have run */
    /* The cluster did not serve the call in time (its slot migrating, or
     * down; conn->err says which): status DLOCK_ESERVER, and it did not run. */
    bool unserved;
} dlock__node_result;

/* Returns true once the results so far decide the outcome: results[j * n +
 * i] is call j's answer from node i, for the k calls of a batch. It may
 * bring *deadline_ns closer: to give the nodes still pending a little
 * longer, but not their whole deadline. */
typedef bool (*dlock__enough_fn)(const dlock__node_result *results, size_t n, size_t k,
                                 int64_t *deadline_ns, void *ctx);

/* Sends `call` to every connection and fills results[0..n). A connection
 * with a router (route.h) is pointed at the server for the call's slot
 * first, and a call that was redirected (MOVED, ASK, ...) goes again, within
 * the deadline. Nodes that did
 * not answer by `deadline_ns` get DLOCK_ETIMEDOUT (their late replies will
 * be discarded). `enough` may be NULL: then every node is waited for.
 * Free the replies with dlock__results_clear(). */
void dlock__fanout(dlock__conn *conns, size_t n, dlock__call *call, int64_t deadline_ns,
                   dlock__node_result *results, dlock__enough_fn enough, void *ctx);

/* The same for `k` calls (1..DLOCK__BATCH_MAX), written to each connection
 * back to back, each node's replies read as they come: one round trip for
 * all. results[j * n + i] is call j's answer from node i. On a cluster,
 * consecutive calls whose slots live on one master share a round trip:
 * calls for another master start another. */
void dlock__fanout_batch(dlock__conn *conns, size_t n, dlock__call *const *calls, size_t k,
                         int64_t deadline_ns, dlock__node_result *results,
                         dlock__enough_fn enough, void *ctx);

void dlock__results_clear(dlock__node_result *results, size_t n);

/* The error code for a server's error reply: DLOCK_EAUTH, DLOCK_EWRONGTYPE
 * or DLOCK_ESERVER. */
int dlock__server_error_code(const dlock__reply *r);

/* An error reply that says the ACL stopped a script at a command the user
 * may not run: what the script did before it stays (Redis rolls nothing
 * back). */
bool dlock__acl_stopped_script(const dlock__reply *r);

#endif

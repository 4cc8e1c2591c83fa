/* Reading state from N servers: one read-only call (a script, a plain
 * command, or a few calls pipelined) to a range of a lane's connections
 * within a deadline, each server's replies judged by the caller, and the
 * count of what they said. The one place where a read decides whether a
 * majority answered and what it said, as the attempt layer decides for
 * acquiring: status, list, the restart check and the operators' probes
 * read through here. */
#ifndef DLOCK_READ_H
#define DLOCK_READ_H

#include "lane.h"
#include "scripts.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One server's part in a read: an answer, yes or no as the caller's judge
 * says; late (not waited for: the majority's answer was known without
 * it); or its failure, a negative code. */
enum { DLOCK__READ_NO = 0, DLOCK__READ_YES = 1, DLOCK__READ_LATE = 2 };

/* The parts of n servers, counted. */
typedef struct dlock__read_tally {
    size_t n, quorum;
    size_t yes, no, late, failed;
    int error; /* the failure every failed server had, DLOCK_ENOQUORUM if they differ; 0: none */
} dlock__read_tally;

void dlock__read_tally_init(dlock__read_tally *t, size_t n);
void dlock__read_tally_add(dlock__read_tally *t, int part);

/* 0 when a majority answered. Else DLOCK_ENOQUORUM, or the failure that
 * every failed server had when there is one server, or when it is not
 * about reaching them (a wrong password, a key of another type). */
int dlock__read_verdict(const dlock__read_tally *t);

/* A majority of all n said yes. */
bool dlock__read_agreed(const dlock__read_tally *t);

#define DLOCK__READ_RESULTS_MAX DLOCK__NODES_MAX /* calls times servers */

typedef struct dlock__read dlock__read;

/* What server i's replies say (rd->results[j * rd->n + i] for call j, every
 * one a reply, maybe an error reply): DLOCK__READ_YES, DLOCK__READ_NO or a
 * failure. Called again as more replies come: it must give the same answer
 * for the same replies. */
typedef int (*dlock__judge_fn)(const dlock__read *rd, size_t i, void *ctx);

struct dlock__read {
    /* Set by the caller: */
    dlock__conn *conns; /* the servers asked */
    size_t n;
    int64_t deadline_ns;
    /* One call: stop once the majority's answer is known, and give the
     * servers still to answer as long again as that took (1 ms at least)
     * to show their own. false: wait for every server. */
    bool majority;
    dlock__judge_fn judge; /* NULL: every server that replied says yes */
    void *ctx;
    /* Set by the read: */
    size_t k; /* calls */
    dlock__node_result results[DLOCK__READ_RESULTS_MAX];
    int parts[DLOCK__NODES_MAX];
    dlock__read_tally tally;
};

/* Sends calls[0..k) to every server, pipelined, and judges and counts their
 * replies. Returns 0, or DLOCK_EINVAL (nothing sent) when k * n is over
 * DLOCK__READ_RESULTS_MAX. Free the replies with dlock__read_clear(). */
int dlock__read_calls(dlock__read *rd, dlock__call *const *calls, size_t k);

/* The same for script `id` with KEYS keys[0..nkeys) and no ARGV. Returns 0
 * or the encoder's failure (nothing sent). */
int dlock__read_script(dlock__read *rd, enum dlock__script_id id, int nkeys,
                       const char *const *keys);

/* The same for the plain command argv[0..argc) (at most 16 words) about
 * hash slot `slot` (-1: the server the connection is at now). */
int dlock__read_command(dlock__read *rd, int slot, int argc, const char *const *argv);

/* Frees the replies still in rd->results. */
void dlock__read_clear(dlock__read *rd);

#endif

/* The audit's judge: from the entries of every server's audit stream of a
 * name (the scripts write them: src/kinds/lua/helpers.lua), the holds, one
 * per token, and what is wrong with them (dlock_audit_kind in dlock.h).
 * Pure: no I/O. */
#ifndef DLOCK_AUDIT_JUDGE_H
#define DLOCK_AUDIT_JUDGE_H

#include "dlock.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One stream entry, as read. Times in server µs; -1: the field was empty. */
typedef struct dlock__audit_entry {
    size_t server;  /* which server's stream */
    char event[8];  /* grant, permit, shared, extend, repair, release, loss */
    char token[DLOCK_TOKEN_LEN + 1];
    uint64_t fence; /* 0: none */
    char host[256];
    long pid;
    int64_t time_us;
    int64_t ttl_ms;  /* grant, extend, repair */
    char reason[8];  /* release, loss: release, expired, cleanup, loss */
    char kind[8];    /* the hold's: grant (exclusive), permit, shared; "": not said */
    int64_t held_ms; /* release, loss: since the grant, by the client */
    int64_t left_ms; /* release, loss: of the validity, by the client */
} dlock__audit_entry;

/* Fills `e` from a stream entry's field-value pairs (fields[0..n), names
 * and values alternating). Unknown fields are ignored. Returns false for an
 * entry that is not one of ours (no event, no token, a bad number). */
bool dlock__audit_entry_parse(dlock__audit_entry *e, size_t server, const char *const *fields,
                              size_t n);

/* The drift allowance of a hold of `ttl_ms`, in µs: TTL x 1 % + 2 ms. */
int64_t dlock__audit_allowance_us(int64_t ttl_ms);

typedef struct dlock__audit_verdict {
    dlock_audit_hold *holds;
    size_t n_holds;
    dlock_audit_finding *findings;
    size_t n_findings;
} dlock__audit_verdict;

/* Judges entries[0..n) of `servers` servers (each server's in the order of
 * its stream). Returns 0 with *v filled (free with
 * dlock__audit_verdict_clear) or DLOCK_ENOMEM. */
int dlock__audit_judge(dlock__audit_verdict *v, const dlock__audit_entry *entries, size_t n,
                       size_t servers);
void dlock__audit_verdict_clear(dlock__audit_verdict *v);

#endif

/* What the tests read and wait for on a server through a plain hiredis
 * connection: keys, strings, TTLs, INFO fields, the auxiliary keys of a
 * name by the wire contract, a fair queue. Each fails the test when the
 * server does not answer. */
#ifndef TEST_REDIS_CHECKS_H
#define TEST_REDIS_CHECKS_H

#include "redis_server.h"

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <sys/types.h>

/* Runs a command and returns the reply (caller frees, or kept_reply()). */
redisReply *run(redisContext *c, const char *fmt, ...);

/* 1 if `key` exists. */
int key_exists(redisContext *c, const char *key);

/* The string value of `key`, or NULL; kept. */
char *string_at(redisContext *c, const char *key);

/* Whether `key` holds the string `value`; the same, or the test fails. */
bool key_holds(redisContext *c, const char *key, const char *value);
void assert_key_holds(redisContext *c, const char *key, const char *value);

/* PTTL of `key`; ZCARD of `key`. */
long long pttl_of(redisContext *c, const char *key);
long long zcard(redisContext *c, const char *key);

/* The server's whole data set, as DEBUG DIGEST: unchanged means nothing was
 * written. Kept. */
char *digest_of(redisContext *c);

/* Fails the test unless `server` holds no key at all: what was refused
 * wrote nothing, what was checked left nothing behind. */
void assert_empty(const test_redis *server);

/* The whole decimal number `s` starts with (ended by the end, a newline or
 * a space), or the test fails. */
long long number_of(const char *s);

/* The number after `field` in INFO `section`, separator included:
 * ("stats", "total_reads_processed:"), ("commandstats",
 * "cmdstat_evalsha:calls="). Fails the test if it is missing. */
long long info_field(redisContext *c, const char *section, const char *field);

/* The same for a counter that INFO leaves out while it is 0, as
 * commandstats does for a command never called: 0 when missing. */
long long info_count(redisContext *c, const char *section, const char *field);

/* Script calls the server ran so far (EVALSHA and its EVAL fallback). */
long long script_calls(redisContext *c);

/* The auxiliary key of kind `kind` ("fence", "owner", "released") of lock
 * `name`, by the wire contract's rule: "{T}:dlock:KIND:NAME", T being the
 * name's hash tag if it has one, else the name. Returns a static buffer
 * (one of 4 in turn): use it before the fifth call. */
const char *aux_key(const char *name, const char *kind);

/* How many wait in the fair queue of `name`. */
long long queue_length(redisContext *c, const char *name);

/* Does the owner record of name's holder name process `pid`? */
bool held_by_pid(redisContext *c, const char *name, pid_t pid);

/* Each waits 10 s at most (times the slowdown), and fails the test unless
 * it came by then: ZCARD of `key` is n; `key` exists; n wait in name's
 * fair queue; someone listens on the release channel of `name` (a waiter
 * that found it busy); the server ran `n` script calls more than `before`. */
void wait_for_zcard(redisContext *c, const char *key, long long n);
void wait_for_key(redisContext *c, const char *key);
void wait_for_queued(redisContext *c, const char *name, long long n);
void wait_for_listener(redisContext *c, const char *name);
void wait_for_script_calls(redisContext *c, long long before, long long n);

#endif

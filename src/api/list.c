/* dlock_list_names: the names that have an owner record, found with SCAN
 * (never KEYS, which blocks a server for as long as it walks every key). */
#include "lane.h"
#include "probe.h"
#include "read.h"
#include "route.h"

#include <fnmatch.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Owner records are "{T}:dlock:KIND:NAME": a mutex's (and a fair lock's)
 * "owner", a semaphore's "owners" and the shared holders' "rowners" (one
 * glob for the three; name_of() keeps only those). */
#define RECORD_MATCH "{*}:dlock:*owner*"
static const char *const record_kinds[] = {"owner:", "owners:", "rowners:"};
/* SCAN's COUNT: buckets walked per round trip. Small enough that the keys
 * one reply carries stay below the reader's array limit
 * (DLOCK__REPLY_ARRAY_MAX) even where nearly every key is a lock's, large
 * enough that 100,000 other keys cost only a few thousand loopback round
 * trips. A page that is too large anyway (long chains, a rehash) is asked
 * again one bucket at a time. */
#define SCAN_COUNT "24"
#define SCAN_COUNT_SMALL "1"

struct dlock_names {
    char **names;
    size_t n, cap;
};

/* The name in an owner record's key, or NULL if `key` is not one. */
static const char *name_of(const char *key)
{
    const char *close = key[0] == '{' ? strchr(key, '}') : NULL;
    if (!close || strncmp(close + 1, ":dlock:", 7) != 0)
        return NULL;
    for (size_t i = 0; i < sizeof(record_kinds) / sizeof(record_kinds[0]); i++) {
        size_t len = strlen(record_kinds[i]);
        if (strncmp(close + 8, record_kinds[i], len) == 0)
            return close[8 + len] ? close + 8 + len : NULL;
    }
    return NULL;
}

static int add_name(dlock_names *l, const char *name)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        char **grown = realloc(l->names, cap * sizeof(char *));
        if (!grown)
            return DLOCK_ENOMEM;
        l->names = grown;
        l->cap = cap;
    }
    if (!(l->names[l->n] = strdup(name)))
        return DLOCK_ENOMEM;
    l->n++;
    return 0;
}

/* Takes the names of one SCAN reply ({cursor, {keys...}}) into *l and the
 * next cursor into `cursor`. */
static int take_page(dlock_names *l, const dlock__reply *r, const char *pattern, char *cursor,
                     size_t cursor_len)
{
    const dlock__reply *keys;
    if (r->type == DLOCK__REPLY_ERROR)
        return dlock__server_error_code(r);
    if (r->type != DLOCK__REPLY_ARRAY || r->elements != 2 ||
        r->element[0]->type != DLOCK__REPLY_STRING || r->element[1]->type != DLOCK__REPLY_ARRAY)
        return DLOCK_EPROTO;
    snprintf(cursor, cursor_len, "%s", r->element[0]->str);
    keys = r->element[1];
    for (size_t i = 0; i < keys->elements; i++) {
        const char *name = keys->element[i]->type == DLOCK__REPLY_STRING
                               ? name_of(keys->element[i]->str)
                               : NULL;
        int rc = name && (!pattern || fnmatch(pattern, name, 0) == 0) ? add_name(l, name) : 0;
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* One SCAN page of the server that calls about hash slot `slot` reach
 * (-1: the endpoint's own) into *l, the next cursor into `cursor`. */
static int scan_page(dlock_client *c, dlock_names *l, size_t node, int slot, const char *pattern,
                     const char *count, char *cursor, size_t cursor_len, char *why, size_t why_len)
{
    const char *argv[] = {"SCAN", cursor, "MATCH", RECORD_MATCH, "COUNT", count};
    dlock__reply *r = NULL;
    int rc = dlock__probe_slot(c, node, slot, 6, argv, &r, why, why_len);
    if (rc < 0)
        return rc;
    if (r->type == DLOCK__REPLY_ERROR)
        snprintf(why, why_len, "%s: %s", dlock__probe_label(c, node), r->str);
    rc = take_page(l, r, pattern, cursor, cursor_len);
    dlock__reply_free(r);
    return rc;
}

/* Every owner record of one server, SCAN page by page. */
static int scan_server(dlock_client *c, dlock_names *l, size_t node, int slot,
                       const char *pattern)
{
    char cursor[32] = "0", why[300];
    do {
        int rc = scan_page(c, l, node, slot, pattern, SCAN_COUNT, cursor, sizeof(cursor), why,
                           sizeof(why));
        if (rc == DLOCK_EPROTO)
            rc = scan_page(c, l, node, slot, pattern, SCAN_COUNT_SMALL, cursor, sizeof(cursor),
                           why, sizeof(why));
        if (rc < 0) {
            dlock__set_error(&c->main, "%s", why);
            return rc;
        }
    } while (strcmp(cursor, "0") != 0);
    return 0;
}

/* Every owner record of endpoint `node`: on a cluster, of every master (a
 * name lives on the master of its slot), reached by a slot each owns; it
 * answered only if every master did. */
static int scan_node(dlock_client *c, dlock_names *l, size_t node, const char *pattern)
{
    int slots[DLOCK__ROUTE_NODES_MAX];
    size_t n = dlock__probe_masters(c, node, slots, DLOCK__ROUTE_NODES_MAX);
    int rc = n ? 0 : scan_server(c, l, node, -1, pattern);
    for (size_t m = 0; m < n && rc == 0; m++)
        rc = scan_server(c, l, node, slots[m], pattern);
    return rc;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted, each name once (a name is on several servers, and SCAN may
 * return a key twice). */
static void sort_unique(dlock_names *l)
{
    size_t kept = 0;
    if (l->n)
        qsort(l->names, l->n, sizeof(char *), by_name);
    for (size_t i = 0; i < l->n; i++) {
        if (kept && strcmp(l->names[kept - 1], l->names[i]) == 0)
            free(l->names[i]);
        else
            l->names[kept++] = l->names[i];
    }
    l->n = kept;
}

/* A lock held by a majority has its record on every majority: the servers
 * that answer need only be one. */
int dlock_list_names(dlock_names **out, dlock_client *c, const char *pattern)
{
    dlock_names *l;
    dlock__read_tally t;
    int rc = dlock__call_start(c, out);
    if (rc < 0)
        return rc;
    if (!(l = calloc(1, sizeof(*l)))) {
        dlock__set_error(&c->main, "out of memory");
        return DLOCK_ENOMEM;
    }
    dlock__read_tally_init(&t, c->n);
    for (size_t i = 0; i < c->n && rc != DLOCK_ENOMEM; i++) {
        rc = scan_node(c, l, i, pattern);
        dlock__read_tally_add(&t, rc == 0 ? DLOCK__READ_YES : rc);
    }
    /* Out of memory, the names are not all there, however many answered. */
    rc = rc == DLOCK_ENOMEM ? rc : dlock__read_verdict(&t);
    if (rc < 0) {
        dlock_names_free(l);
        return rc;
    }
    c->main.errmsg[0] = '\0';
    sort_unique(l);
    *out = l;
    return 0;
}

size_t dlock_names_count(const dlock_names *l)
{
    return l ? l->n : 0;
}

const char *dlock_names_at(const dlock_names *l, size_t i)
{
    return l && i < l->n ? l->names[i] : NULL;
}

void dlock_names_free(dlock_names *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++)
        free(l->names[i]);
    free(l->names);
    free(l);
}

/* dlock_audit_read: every server's audit stream of a name, read in pages
 * with XREVRANGE (the newest first), judged by base/audit_judge.c. */
#include "audit_judge.h"
#include "clock.h"
#include "lane.h"
#include "names.h"
#include "probe.h"
#include "slot.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Entries per XREVRANGE: one reply stays below the reader's array limit
 * (DLOCK__REPLY_ARRAY_MAX). */
#define PAGE 50
#define PAGE_TEXT "50"
#define FIELDS_MAX 32

struct dlock_audit {
    dlock__audit_verdict verdict;
    size_t entries;
};

struct entries {
    dlock__audit_entry *e;
    size_t n, cap;
};

static int push(struct entries *list, const dlock__audit_entry *e)
{
    if (list->n == list->cap) {
        size_t cap = list->cap ? 2 * list->cap : 256;
        dlock__audit_entry *grown = realloc(list->e, cap * sizeof(*grown));
        if (!grown)
            return DLOCK_ENOMEM;
        list->e = grown;
        list->cap = cap;
    }
    list->e[list->n++] = *e;
    return 0;
}

/* One XREVRANGE reply: its entries into `list`, the last ID into `last`.
 * Returns how many entries the page had, or a negative code. */
static int take_page(dlock_client *c, const dlock__reply *r, size_t server, struct entries *list,
                     char *last, size_t last_len)
{
    if (r->type == DLOCK__REPLY_ERROR) {
        int rc = dlock__server_error_code(r);
        dlock__set_error(&c->main, "%s: %s", dlock__probe_label(c, server), r->str);
        return rc;
    }
    if (r->type != DLOCK__REPLY_ARRAY)
        return DLOCK_EPROTO;
    for (size_t i = 0; i < r->elements; i++) {
        const dlock__reply *entry = r->element[i], *fields;
        const char *words[FIELDS_MAX];
        dlock__audit_entry e;
        size_t n = 0;
        if (entry->type != DLOCK__REPLY_ARRAY || entry->elements != 2 ||
            entry->element[0]->type != DLOCK__REPLY_STRING ||
            entry->element[1]->type != DLOCK__REPLY_ARRAY)
            return DLOCK_EPROTO;
        snprintf(last, last_len, "%s", entry->element[0]->str);
        fields = entry->element[1];
        for (size_t j = 0; j < fields->elements && n < FIELDS_MAX; j++)
            if (fields->element[j]->type == DLOCK__REPLY_STRING)
                words[n++] = fields->element[j]->str;
        /* An entry that is not ours (written by hand, say) is left out. */
        if (dlock__audit_entry_parse(&e, server, words, n) && push(list, &e) < 0)
            return DLOCK_ENOMEM;
    }
    return (int)r->elements;
}

/* The newest DLOCK_AUDIT_READ_MAX entries of the last since_ms (0: all)
 * of one server's stream, page by page back in time: a stream longer than
 * that loses its oldest, never the holds that matter now. */
static int read_server(dlock_client *c, size_t server, const char *key, int64_t since_ms,
                       struct entries *list)
{
    char start[32], end[64] = "+", why[256]; /* end: "(" and an entry ID (last) */
    size_t read = 0;
    snprintf(start, sizeof(start), "%" PRId64, since_ms);
    while (read < DLOCK_AUDIT_READ_MAX) {
        const char *argv[] = {"XREVRANGE", key, end, start, "COUNT", PAGE_TEXT};
        dlock__reply *r = NULL;
        char last[48] = "";
        int rc = dlock__probe_slot(c, server, (int)dlock__key_slot(key, strlen(key)), 6, argv,
                                   &r, why, sizeof(why));
        if (rc < 0) {
            const char *label = dlock__probe_label(c, server);
            if (strncmp(why, label, strlen(label)) == 0) /* a connection's words name it */
                dlock__set_error(&c->main, "%s", why);
            else
                dlock__set_error(&c->main, "%s: %s", label, why);
            return rc;
        }
        rc = take_page(c, r, server, list, last, sizeof(last));
        dlock__reply_free(r);
        if (rc < 0)
            return rc;
        read += (size_t)rc;
        if (rc < PAGE)
            break;
        snprintf(end, sizeof(end), "(%s", last); /* before the last one */
    }
    return 0;
}

static int64_t since_start_ms(int64_t since_ms)
{
    struct timespec now;
    if (since_ms == 0)
        return 0;
    clock_gettime(CLOCK_REALTIME, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000 - since_ms;
}

int dlock_audit_read(dlock_audit **out, dlock_client *client, const char *name, int64_t since_ms)
{
    struct entries list = {0};
    dlock__keys keys;
    dlock_audit *a;
    char why[256];
    char *key;
    int rc = dlock__call_start(client, out);
    if (rc < 0)
        return rc;
    if (!name || since_ms < 0) {
        dlock__set_error(&client->main, "a name and a since_ms of 0 or more are needed");
        return DLOCK_EINVAL;
    }
    rc = dlock__keys_make(&keys, name, why, sizeof(why));
    if (rc < 0) {
        dlock__set_error(&client->main, "%s", why);
        return rc;
    }
    key = dlock__aux_key(name, "audit");
    dlock__keys_clear(&keys);
    a = calloc(1, sizeof(*a));
    rc = key && a ? 0 : DLOCK_ENOMEM;
    for (size_t i = 0; rc == 0 && i < client->n; i++)
        rc = read_server(client, i, key, since_start_ms(since_ms), &list);
    if (rc == 0)
        rc = dlock__audit_judge(&a->verdict, list.e, list.n, client->n);
    if (rc == DLOCK_ENOMEM)
        dlock__set_error(&client->main, "out of memory");
    free(key);
    free(list.e);
    if (rc < 0) {
        free(a);
        return rc;
    }
    a->entries = list.n;
    *out = a;
    return 0;
}

size_t dlock_audit_holds(const dlock_audit *audit, const dlock_audit_hold **out)
{
    *out = audit ? audit->verdict.holds : NULL;
    return audit ? audit->verdict.n_holds : 0;
}

size_t dlock_audit_findings(const dlock_audit *audit, const dlock_audit_finding **out)
{
    *out = audit ? audit->verdict.findings : NULL;
    return audit ? audit->verdict.n_findings : 0;
}

size_t dlock_audit_entries(const dlock_audit *audit)
{
    return audit ? audit->entries : 0;
}

void dlock_audit_free(dlock_audit *audit)
{
    if (!audit)
        return;
    dlock__audit_verdict_clear(&audit->verdict);
    free(audit);
}

/* The acquire decision: from any mix of node answers (grants with tokens,
 * a semaphore's grants with their slot, refusals with PTTLs, errors,
 * replies of the wrong shape, no answer) and any timing, a grant implies a
 * majority of grants, 0 < validity <= ttl - elapsed - drift, and the
 * largest token that a granting node gave. */
#include "attempt.h"
#include "resp.h"

#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads bytes from the input, zero once it runs out. */
struct input {
    const uint8_t *data;
    size_t size, at;
};

static uint64_t take(struct input *in, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v = v << 8 | (in->at < in->size ? in->data[in->at++] : 0);
    return v;
}

static dlock__reply *integer(long long v)
{
    dlock__reply *r = calloc(1, sizeof(*r));
    r->type = DLOCK__REPLY_INTEGER;
    r->integer = v;
    return r;
}

static dlock__reply *string(const char *s)
{
    dlock__reply *r = calloc(1, sizeof(*r));
    r->type = DLOCK__REPLY_STRING;
    r->str = strdup(s);
    r->len = strlen(s);
    return r;
}

static dlock__reply *array(size_t n, dlock__reply **items)
{
    dlock__reply *r = calloc(1, sizeof(*r));
    r->type = DLOCK__REPLY_ARRAY;
    r->elements = n;
    /* An array of pointers to replies: the size of a pointer is meant. */
    r->element = calloc(n ? n : 1, sizeof(*r->element)); // NOLINT(bugprone-sizeof-expression)
    memcpy(r->element, items, n * sizeof(*items));      // NOLINT(bugprone-sizeof-expression)
    return r;
}

/* One node's answer, as its kind byte says. */
static void answer(struct input *in, dlock__node_result *res, uint64_t *fence)
{
    char digits[24];
    unsigned kind = (unsigned)take(in, 1) % 7;
    *fence = take(in, 2) % 8; /* few values: ties are the interesting case */
    res->status = DLOCK__REPLIED;
    res->sent = true;
    snprintf(digits, sizeof(digits), "%llu", (unsigned long long)*fence);
    switch (kind) {
    case 0: /* granted */
        res->reply = array(2, (dlock__reply *[]){integer(1), string(digits)});
        break;
    case 1: /* busy */
        res->reply = array(2, (dlock__reply *[]){integer(0), integer((long long)*fence * 100)});
        break;
    case 2: /* a semaphore's grant names its slot */
        res->reply = array(3, (dlock__reply *[]){integer(1), string(digits), integer(1)});
        break;
    case 3:
        res->reply = string("ERR nope");
        res->reply->type = DLOCK__REPLY_ERROR;
        break;
    case 4:
        res->reply = NULL;
        res->status = DLOCK__PENDING;
        break;
    case 5:
        res->reply = NULL;
        res->status = DLOCK_ETIMEDOUT;
        break;
    default:
        res->reply = integer(1);
        break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct input in = {data, size, 0};
    dlock__node_result results[DLOCK_NODES_MAX];
    uint64_t fences[DLOCK_NODES_MAX];
    size_t n = 1 + (size_t)take(&in, 1) % DLOCK_NODES_MAX;
    int64_t ttl_ms = 1 + (int64_t)(take(&in, 4) % DLOCK_TTL_MAX_MS);
    double drift = (double)(take(&in, 1) % 11) / 100.0;
    int64_t start = (int64_t)(take(&in, 4) % 1000000000u);
    int64_t now = start + (int64_t)take(&in, 5);
    dlock__tally t = {.quorum = n / 2 + 1};
    int64_t until = 0;
    int rc;

    for (size_t i = 0; i < n; i++)
        answer(&in, &results[i], &fences[i]);
    rc = dlock__acquire_judge(&t, results, n, ttl_ms, drift, start, now, &until);
    if (rc == 0) {
        size_t granted = 0;
        uint64_t largest = 0;
        int64_t drift_ns = (int64_t)((double)ttl_ms * drift * 1000000) + 2000000;
        for (size_t i = 0; i < n; i++) {
            const dlock__reply *r = results[i].reply;
            int grant = r && r->type == DLOCK__REPLY_ARRAY &&
                        (r->elements == 2 || r->elements == 3) &&
                        r->element[0]->integer == 1 && fences[i] > 0;
            granted += grant;
            largest = grant && fences[i] > largest ? fences[i] : largest;
        }
        assert(granted >= n / 2 + 1 && t.yes == granted);
        assert(until > now && until - now <= ttl_ms * 1000000 - (now - start) - drift_ns);
        assert(t.fence == largest);
    } else {
        assert(rc == DLOCK_EBUSY);
    }
    for (size_t i = 0; i < n; i++)
        dlock__reply_free(results[i].reply);
    return 0;
}

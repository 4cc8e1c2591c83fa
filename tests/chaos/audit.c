/* The audit against the checker. See audit_agree() in chaos.h. */
#include "chaos.h"

#include <dlock.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define FLAGGED_MAX 4096

struct flagged {
    uint64_t fences[FLAGGED_MAX];
    size_t n;
};

static void flag(struct flagged *f, uint64_t fence)
{
    if (fence && f->n < FLAGGED_MAX)
        f->fences[f->n++] = fence;
}

static bool is_flagged(const struct flagged *f, uint64_t fence)
{
    for (size_t i = 0; i < f->n; i++)
        if (f->fences[i] == fence)
            return true;
    return false;
}

/* A hold of an overlap, on stderr, its times in ms from `zero_us` (server
 * time): what a disagreement is read from. */
static void print_hold(const char *role, const dlock_audit_hold *h, int64_t zero_us)
{
    fprintf(stderr,
            "dlock-chaos: audit:   %s %.8s fence %llu servers %u ttl %d ms: start %+.1f, "
            "valid to %+.1f, end %+.1f (%d)\n",
            role, h->token, (unsigned long long)h->fence, h->servers, h->ttl_ms,
            (double)(h->start_us - zero_us) / 1000, (double)(h->valid_us - zero_us) / 1000,
            h->end_us ? (double)(h->end_us - zero_us) / 1000 : 0.0, (int)h->end);
}

static void print_overlaps(const dlock_audit_hold *holds, const dlock_audit_finding *findings,
                           size_t n)
{
    struct timespec now;
    int64_t zero_us;
    clock_gettime(CLOCK_REALTIME, &now);
    zero_us = (int64_t)now.tv_sec * 1000000 + now.tv_nsec / 1000;
    for (size_t i = 0; i < n; i++) {
        if (findings[i].kind != DLOCK_AUDIT_OVERLAP)
            continue;
        fprintf(stderr,
                "dlock-chaos: audit:  overlap by %.1f ms (times in ms from now, %lld in the "
                "history's clock):\n",
                (double)findings[i].amount_us / 1000, (long long)chaos_now_ns());
        print_hold("a", &holds[findings[i].a], zero_us);
        print_hold("b", &holds[findings[i].b], zero_us);
    }
}

/* One name: its findings, the fences of the holds they are about; the
 * overlaps printed when the checker saw no overlap of validity windows. */
static int judge_name(dlock_client *c, int name, bool expect_none, struct flagged *f,
                      struct audit_agreement *out)
{
    const dlock_audit_hold *holds;
    const dlock_audit_finding *findings;
    dlock_audit *audit = NULL;
    char key[32];
    size_t n;
    snprintf(key, sizeof(key), "chaos:%d", name);
    if (dlock_audit_read(&audit, c, key, 0) < 0) {
        fprintf(stderr, "dlock-chaos: audit of %s: %s\n", key, dlock_client_errmsg(c));
        return -1;
    }
    dlock_audit_holds(audit, &holds);
    n = dlock_audit_findings(audit, &findings);
    f->n = 0;
    for (size_t i = 0; i < n; i++) {
        flag(f, holds[findings[i].a].fence);
        flag(f, holds[findings[i].b].fence);
        out->overlaps += findings[i].kind == DLOCK_AUDIT_OVERLAP;
    }
    if (expect_none)
        print_overlaps(holds, findings, n);
    out->findings += (long)n;
    dlock_audit_free(audit);
    return 0;
}

void audit_agree(const struct chaos_config *cfg, const char urls[][64], const struct checker *k,
                 bool clocks_jumped, struct audit_agreement *out)
{
    dlock_client_options o = DLOCK_CLIENT_OPTIONS_INIT;
    static struct flagged f;
    const struct chaos_overlap *pairs;
    const char *list[CHAOS_NODES_MAX];
    size_t n_pairs = checker_section_overlaps(k, &pairs);
    dlock_client *c = NULL;
    char why[256];

    memset(out, 0, sizeof(*out));
    for (int i = 0; i < cfg->nodes; i++)
        list[i] = urls[i];
    o.urls = list;
    o.n_urls = (size_t)cfg->nodes;
    if (dlock_client_open(&c, &o, why, sizeof(why)) < 0) {
        fprintf(stderr, "dlock-chaos: audit: %s\n", why);
        out->unreadable = true;
        return;
    }
    for (int name = 0; name < cfg->names && !out->unreadable; name++) {
        long overlaps_before = out->overlaps;
        bool expect_none = !clocks_jumped && checker_validity_overlaps(k, name) == 0;
        if (judge_name(c, name, expect_none, &f, out) < 0) {
            out->unreadable = true;
            break;
        }
        for (size_t i = 0; i < n_pairs; i++) {
            if (pairs[i].name != name || !pairs[i].knowable)
                continue;
            out->checked++;
            if (is_flagged(&f, pairs[i].fence_a) || is_flagged(&f, pairs[i].fence_b))
                continue;
            out->missed++;
            fprintf(stderr, "dlock-chaos: audit: chaos:%d: no finding about the overlapping "
                            "sections of fences %llu and %llu\n", name,
                    (unsigned long long)pairs[i].fence_a, (unsigned long long)pairs[i].fence_b);
        }
        if (expect_none && out->overlaps > overlaps_before) {
            out->extra += out->overlaps - overlaps_before;
            fprintf(stderr, "dlock-chaos: audit: chaos:%d: %ld overlaps of grants, none of "
                            "validity windows\n", name, out->overlaps - overlaps_before);
        }
    }
    dlock_client_close(c);
}

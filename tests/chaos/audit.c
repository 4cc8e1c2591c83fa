/* The audit against the checker. See audit_agree() in chaos.h. */
#include "chaos.h"

#include <dlock.h>
#include <stdio.h>
#include <string.h>

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

/* One name: its findings, the fences of the holds they are about. */
static int judge_name(dlock_client *c, int name, struct flagged *f, struct audit_agreement *out)
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
        if (judge_name(c, name, &f, out) < 0) {
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
        if (!clocks_jumped && checker_validity_overlaps(k, name) == 0 &&
            out->overlaps > overlaps_before) {
            out->extra += out->overlaps - overlaps_before;
            fprintf(stderr, "dlock-chaos: audit: chaos:%d: %ld overlaps of grants, none of "
                            "validity windows\n", name, out->overlaps - overlaps_before);
        }
    }
    dlock_client_close(c);
}

/* dlock_restart_remaining(): the restart rule's check alone, for status. */
#include "clock.h"
#include "durable.h"
#include "read.h"

int dlock_restart_remaining(int64_t *out, dlock_client *c, size_t node)
{
    dlock__read rd = {.n = 1};
    dlock__guard g;
    dlock__gate gate = {DLOCK__GATE_OPEN, 0, 0, 0, false, false};
    int rc = dlock__call_start(c, out);
    if (rc == 0 && node >= c->n) {
        dlock__set_error(&c->main, "no server number %zu", node);
        rc = DLOCK_EINVAL;
    }
    if (rc < 0)
        return rc;
    rd.conns = &c->main.conns[node];
    rd.deadline_ns = dlock__node_deadline(c, 0, dlock__now_ns());
    /* On a cluster: the master the last call went to (dlock_status_query()
     * leaves it at the name's), and its marker. */
    rc = dlock__guard_init(&g, c, rd.conns, 1, DLOCK__GUARD_CHECK, NULL, 0, rd.deadline_ns);
    if (rc == 0 && g.before)
        rc = dlock__read_calls(&rd, g.calls, g.n_calls);
    if (rc == 0 && g.before) {
        dlock__guard_rerouted(&g, rd.conns, 1);
        gate = dlock__guard_gate(&g, rd.results, 1, 0);
        rc = gate.kind == DLOCK__GATE_FAILED ? gate.error : 0;
        if (rc < 0) {
            dlock__set_error(&c->main, "the restart check failed");
            dlock__guard_explain(&g, &c->main, rd.results, 1);
        }
    }
    if (rc == 0)
        *out = g.before && gate.kind == DLOCK__GATE_RESTARTING ? gate.remaining_ms : 0;
    dlock__read_clear(&rd);
    dlock__guard_free(&g);
    return rc;
}

/* dlock-bench WORKLOAD --port P [--port P2 ...] [--seconds S] [--procs N]
 *             [--locks K] [--clients M] [--ttl MS] [--max-cycles N]
 *             [--node-timeout MS] [--permits N] [--cs-us US] [--fair] [--renew]
 *             [--replicas K] [--restart-delay MS] [--writers W]
 * Workloads: floor, floor-minimal, floor-null, uncontended, uncontended-audit (the
 * same with the client's audit on), redlock (uncontended on
 * every --port), redlock-minority (the same, on its own name, while
 * scripts/bench holds some of the nodes paused: the first --port must
 * answer, since commands are counted there), contended, renew, many,
 * semaphore (--procs processes on --permits permits, --cs-us each),
 * shared (--procs processes on one name, --writers of them exclusive, the
 * others shared, --cs-us each),
 * replicas (uncontended, with --replicas; on a primary with replicas),
 * floor-handoff and floor-handoff-direct (--procs processes handing one
 * lock round-robin with plain hiredis: the floor of a fair handoff). Each
 * prints one JSON line; scripts/bench runs them against servers it starts. */
#include "bench.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    int (*run)(const struct bench_args *a);
} workloads[] = {
    {"floor", bench_floor},
    {"floor-minimal", bench_floor_minimal},
    {"floor-null", bench_floor_null},
    {"floor-handoff", bench_floor_handoff},
    {"floor-handoff-direct", bench_floor_handoff}, /* the release grants the lock */
    {"uncontended", bench_uncontended},
    {"uncontended-audit", bench_uncontended}, /* with the audit stream written */
    {"redlock", bench_uncontended}, /* uncontended, with several --port */
    {"redlock-minority", bench_uncontended},
    {"contended", bench_contended},
    {"renew", bench_renew},
    {"many", bench_many},
    {"semaphore", bench_semaphore},
    {"shared", bench_shared},
    {"replicas", bench_uncontended}, /* uncontended, with --replicas */
};

/* A strict number: the whole argument, finite. Returns 0 or -1. */
static int number(const char *s, double *out)
{
    char *end;
    *out = strtod(s, &end);
    return end != s && *end == '\0' && *out == *out ? 0 : -1;
}

int main(int argc, char **argv)
{
    static const struct option options[] = {
        {"port", required_argument, NULL, 'p'},    {"seconds", required_argument, NULL, 's'},
        {"procs", required_argument, NULL, 'P'},   {"locks", required_argument, NULL, 'k'},
        {"clients", required_argument, NULL, 'c'}, {"ttl", required_argument, NULL, 't'},
        {"max-cycles", required_argument, NULL, 'm'}, {"node-timeout", required_argument, NULL, 'n'},
        {"permits", required_argument, NULL, 'N'}, {"cs-us", required_argument, NULL, 'u'},
        {"fair", no_argument, NULL, 'f'},         {"renew", no_argument, NULL, 'r'},
        {"replicas", required_argument, NULL, 'R'}, {"restart-delay", required_argument, NULL, 'D'},
        {"writers", required_argument, NULL, 'w'},
        {NULL, 0, NULL, 0},
    };
    struct bench_args a = {.seconds = 5, .procs = 8, .locks = 1000, .clients = 4,
                           .ttl_ms = 3000, .max_cycles = 2000000, .permits = 4, .cs_us = 200,
                           .writers = 1};
    double v;
    int opt;
    while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
        if (opt == 'f' || opt == 'r') {
            *(opt == 'f' ? &a.fair : &a.renew) = 1;
            continue;
        }
        if (opt == '?' || number(optarg, &v) < 0 || v < 0 || v > 1e9) {
            fprintf(stderr, "dlock-bench: bad option or value\n");
            return 64;
        }
        switch (opt) {
        case 'p':
            if (a.n_ports == BENCH_PORTS_MAX)
                return 64;
            a.ports[a.n_ports++] = (int)v;
            break;
        case 's': a.seconds = v; break;
        case 'P': a.procs = (int)v; break;
        case 'k': a.locks = (int)v; break;
        case 'c': a.clients = (int)v; break;
        case 't': a.ttl_ms = (int64_t)v; break;
        case 'n': a.node_timeout_ms = (int)v; break;
        case 'N': a.permits = (int)v; break;
        case 'u': a.cs_us = (int)v; break;
        case 'R': a.replicas = (int)v; break;
        case 'D': a.restart_delay_ms = (int64_t)v; break;
        case 'w': a.writers = (int)v; break;
        default: a.max_cycles = (long)v; break;
        }
    }
    for (int i = 0; i < a.n_ports; i++)
        if (a.ports[i] < 1024 || a.ports[i] > 65535)
            a.n_ports = 0;
    a.port = a.n_ports ? a.ports[0] : 0;
    if (optind != argc - 1 || a.n_ports == 0 || a.seconds <= 0 ||
        a.max_cycles < 1 || a.locks < 1 || a.clients < 1 || a.ttl_ms < 30) {
        fprintf(stderr, "usage: dlock-bench floor|floor-minimal|floor-null|floor-handoff|floor-handoff-direct|"
                        "uncontended|uncontended-audit|redlock|"
                        "redlock-minority|contended|renew|many|semaphore|shared|replicas --port P "
                        "[--port P2 ...] [--seconds S] [--procs N] [--locks K] [--clients M] "
                        "[--ttl MS] [--max-cycles N] [--node-timeout MS] [--permits N] "
                        "[--cs-us US] [--fair] [--renew] [--replicas K] [--restart-delay MS] "
                        "[--writers W]\n");
        return 64;
    }
    a.workload = argv[optind];
    a.audit = strcmp(a.workload, "uncontended-audit") == 0;
    for (size_t i = 0; i < sizeof(workloads) / sizeof(workloads[0]); i++)
        if (strcmp(a.workload, workloads[i].name) == 0)
            return workloads[i].run(&a);
    fprintf(stderr, "dlock-bench: unknown workload '%s'\n", a.workload);
    return 64;
}

/* dlock-bench WORKLOAD --port P [--port P2 ...] [--seconds S] [--procs N]
 *             [--locks K] [--clients M] [--ttl MS] [--max-cycles N]
 * Workloads: floor, uncontended, redlock (uncontended on every --port),
 * contended, renew, many. Each prints one JSON line; scripts/bench runs them
 * against servers it starts. */
#include "bench.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    int (*run)(const struct bench_args *a);
} workloads[] = {
    {"floor", bench_floor},         {"uncontended", bench_uncontended},
    {"redlock", bench_uncontended}, /* uncontended, with several --port */
    {"contended", bench_contended}, {"renew", bench_renew},
    {"many", bench_many},
};

int main(int argc, char **argv)
{
    static const struct option options[] = {
        {"port", required_argument, NULL, 'p'},    {"seconds", required_argument, NULL, 's'},
        {"procs", required_argument, NULL, 'P'},   {"locks", required_argument, NULL, 'k'},
        {"clients", required_argument, NULL, 'c'}, {"ttl", required_argument, NULL, 't'},
        {"max-cycles", required_argument, NULL, 'm'}, {NULL, 0, NULL, 0},
    };
    struct bench_args a = {.seconds = 5, .procs = 8, .locks = 1000, .clients = 4,
                           .ttl_ms = 3000, .max_cycles = 2000000};
    int opt;
    while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
        switch (opt) {
        case 'p':
            if (a.n_ports == BENCH_PORTS_MAX)
                return 64;
            a.ports[a.n_ports++] = atoi(optarg);
            break;
        case 's': a.seconds = atof(optarg); break;
        case 'P': a.procs = atoi(optarg); break;
        case 'k': a.locks = atoi(optarg); break;
        case 'c': a.clients = atoi(optarg); break;
        case 't': a.ttl_ms = atoll(optarg); break;
        case 'm': a.max_cycles = atol(optarg); break;
        default: return 64;
        }
    }
    for (int i = 0; i < a.n_ports; i++)
        if (a.ports[i] < 1024 || a.ports[i] > 65535)
            a.n_ports = 0;
    a.port = a.n_ports ? a.ports[0] : 0;
    if (optind != argc - 1 || a.n_ports == 0 || a.seconds <= 0 ||
        a.max_cycles < 1 || a.locks < 1 || a.clients < 1 || a.ttl_ms < 30) {
        fprintf(stderr, "usage: dlock-bench floor|uncontended|redlock|contended|renew|many "
                        "--port P [--port P2 ...] [--seconds S] [--procs N] [--locks K] "
                        "[--clients M] [--ttl MS]\n");
        return 64;
    }
    a.workload = argv[optind];
    for (size_t i = 0; i < sizeof(workloads) / sizeof(workloads[0]); i++)
        if (strcmp(a.workload, workloads[i].name) == 0)
            return workloads[i].run(&a);
    fprintf(stderr, "dlock-bench: unknown workload '%s'\n", a.workload);
    return 64;
}

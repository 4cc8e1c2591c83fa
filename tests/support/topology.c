/* Cluster and sentinel topologies for the tests. See topology.h. */
#include "topology.h"

#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define READY_WAIT_MS 20000

redisReply *test_command(int port, const char *fmt, ...)
{
    struct timeval tv = {5, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    redisReply *reply = NULL;
    if (c && !c->err) {
        va_list ap;
        redisSetTimeout(c, tv);
        va_start(ap, fmt);
        reply = redisvCommand(c, fmt, ap);
        va_end(ap);
    }
    redisFree(c);
    return reply;
}

/* Does INFO `section` of the server at `port` contain `text`? */
static int info_says(int port, const char *section, const char *text)
{
    redisReply *r = test_command(port, "INFO %s", section);
    int yes = r && r->type == REDIS_REPLY_STRING && strstr(r->str, text) != NULL;
    freeReplyObject(r);
    return yes;
}

/* Polls `check` until it holds, at most `ms` times the slowdown. */
static int wait_until(int (*check)(void *), void *arg, int ms)
{
    long long deadline = test_now_ms() + (long long)ms * test_slowdown();
    while (test_now_ms() < deadline) {
        if (check(arg))
            return 0;
        usleep(20000);
    }
    return -1;
}

/* Stops the server and removes its directory with the files that
 * test_redis_stop() does not know of: a cluster's nodes.conf, the snapshot
 * a full resync writes (replication), a sentinel's configuration. */
static void remove_dir(test_redis *r, const char *const *files)
{
    char dir[sizeof(r->dir)], path[256];
    snprintf(dir, sizeof(dir), "%s", r->dir);
    test_redis_stop(r);
    for (size_t i = 0; dir[0] && files[i]; i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
        unlink(path);
    }
    if (dir[0])
        rmdir(dir);
}

/* ---- Cluster ----------------------------------------------------------- */

static int state_ok(int port)
{
    redisReply *r = test_command(port, "CLUSTER INFO");
    int ok = r && r->type == REDIS_REPLY_STRING && strstr(r->str, "cluster_state:ok") != NULL;
    freeReplyObject(r);
    return ok;
}

static int cluster_ready(void *arg)
{
    test_cluster *c = arg;
    for (int i = 0; i < TEST_CLUSTER_NODES; i++) {
        if (!state_ok(c->nodes[i].port))
            return 0;
        if (info_says(c->nodes[i].port, "replication", "role:slave") &&
            !info_says(c->nodes[i].port, "replication", "master_link_status:up"))
            return 0;
    }
    return 1;
}

int test_cluster_wait_ok(test_cluster *c, int ms)
{
    return wait_until(cluster_ready, c, ms);
}

/* redis-cli --cluster create over the six nodes, a replica per master. */
static int create_cluster(test_cluster *c)
{
    char addrs[TEST_CLUSTER_NODES][32];
    const char *argv[TEST_CLUSTER_NODES + 8];
    int n = 0, status = -1;
    pid_t pid;
    argv[n++] = "redis-cli";
    argv[n++] = "--cluster";
    argv[n++] = "create";
    for (int i = 0; i < TEST_CLUSTER_NODES; i++) {
        snprintf(addrs[i], sizeof(addrs[i]), "127.0.0.1:%d", c->nodes[i].port);
        argv[n++] = addrs[i];
    }
    argv[n++] = "--cluster-replicas";
    argv[n++] = "1";
    argv[n++] = "--cluster-yes";
    argv[n] = NULL;
    pid = fork();
    if (pid == 0) {
        int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
        dup2(devnull, STDOUT_FILENO);
        dup2(devnull, STDERR_FILENO);
        execvp("redis-cli", (char *const *)argv);
        _exit(127);
    }
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return -1;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

int test_cluster_start(test_cluster *c)
{
    return test_cluster_start_with_timeout(c, 3000);
}

int test_cluster_start_with_timeout(test_cluster *c, int node_timeout_ms)
{
    static char timeout[16]; /* the servers keep pointers to their arguments */
    const char *const extra[] = {"--cluster-enabled", "yes", "--cluster-config-file",
                                 "nodes.conf", "--cluster-node-timeout", timeout,
                                 "--repl-diskless-sync-delay", "0", NULL};
    snprintf(timeout, sizeof(timeout), "%d", node_timeout_ms);
    memset(c, 0, sizeof(*c));
    for (int i = 0; i < TEST_CLUSTER_NODES; i++)
        if (test_redis_start(&c->nodes[i], extra) < 0)
            return -1;
    if (create_cluster(c) < 0 || test_cluster_wait_ok(c, READY_WAIT_MS) < 0) {
        fprintf(stderr, "cannot make a cluster of the nodes on ports %d...\n", c->nodes[0].port);
        return -1;
    }
    return 0;
}

void test_cluster_stop(test_cluster *c)
{
    static const char *const files[] = {"nodes.conf", "dump.rdb", NULL};
    for (int i = 0; i < TEST_CLUSTER_NODES; i++)
        remove_dir(&c->nodes[i], files);
}

int test_cluster_owner(test_cluster *c, const char *key)
{
    for (int i = 0; i < TEST_CLUSTER_NODES; i++) {
        redisReply *r = test_command(c->nodes[i].port, "TYPE %s", key);
        int serves = r && r->type == REDIS_REPLY_STATUS;
        freeReplyObject(r);
        if (serves)
            return i;
    }
    return -1;
}

void test_cluster_node_id(int port, char *id)
{
    redisReply *r = test_command(port, "CLUSTER MYID");
    snprintf(id, 41, "%s", r && r->type == REDIS_REPLY_STRING ? r->str : "");
    freeReplyObject(r);
}

int test_cluster_node_with_role(test_cluster *c, const char *want, int nth)
{
    for (int i = 0; i < TEST_CLUSTER_NODES; i++) {
        redisReply *r = test_command(c->nodes[i].port, "ROLE");
        int match = r && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
                    strcmp(r->element[0]->str, want) == 0;
        freeReplyObject(r);
        if (match && nth-- == 0)
            return i;
    }
    return -1;
}

/* ---- Sentinel ---------------------------------------------------------- */

static void exec_sentinel(const char *conf)
{
    int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dup2(devnull, STDIN_FILENO);
    dup2(devnull, STDOUT_FILENO);
    dup2(devnull, STDERR_FILENO);
    execlp("redis-server", "redis-server", conf, "--sentinel", (char *)NULL);
    _exit(127);
}

static int answers_ping(void *arg)
{
    test_redis *r = arg;
    redisReply *reply = test_command(r->port, "PING");
    int ok = reply && reply->type == REDIS_REPLY_STATUS;
    freeReplyObject(reply);
    return ok;
}

static int start_sentinel(test_redis *r, const char *name, int primary_port, int down_after_ms,
                          int failover_timeout_ms)
{
    char conf[256];
    FILE *f;
    memset(r, 0, sizeof(*r));
    snprintf(r->dir, sizeof(r->dir), "/tmp/dlock-test-XXXXXX");
    if (!mkdtemp(r->dir))
        return -1;
    r->port = test_free_port();
    snprintf(r->url, sizeof(r->url), "redis://127.0.0.1:%d", r->port);
    snprintf(conf, sizeof(conf), "%s/sentinel.conf", r->dir);
    f = fopen(conf, "w");
    if (!f)
        return -1;
    fprintf(f, "port %d\nbind 127.0.0.1\ndir %s\nlogfile %s/redis.log\n"
               "sentinel monitor %s 127.0.0.1 %d 2\n"
               "sentinel down-after-milliseconds %s %d\n"
               "sentinel failover-timeout %s %d\n",
            r->port, r->dir, r->dir, name, primary_port, name, down_after_ms, name,
            failover_timeout_ms);
    fclose(f);
    r->pid = fork();
    if (r->pid < 0)
        return -1;
    if (r->pid == 0)
        exec_sentinel(conf);
    return wait_until(answers_ping, r, READY_WAIT_MS);
}

/* Every sentinel knows the replicas, and they are in sync. */
static int sentinels_ready(void *arg)
{
    test_sentinels *s = arg;
    if (!info_says(s->replica.port, "replication", "master_link_status:up") ||
        (s->replicas > 1 && !info_says(s->replica2.port, "replication", "master_link_status:up")))
        return 0;
    for (int i = 0; i < TEST_SENTINELS; i++) {
        redisReply *r = test_command(s->sentinels[i].port, "SENTINEL REPLICAS %s", s->name);
        int known = r && r->type == REDIS_REPLY_ARRAY && r->elements == (size_t)s->replicas;
        freeReplyObject(r);
        if (!known)
            return 0;
    }
    return 1;
}

static int start_sentinels(test_sentinels *s, const char *name, int replicas, int down_after_ms,
                           int failover_timeout_ms)
{
    static const char *const primary[] = {"--repl-diskless-sync-delay", "0", NULL};
    char port[16];
    const char *replica[] = {"--repl-diskless-sync-delay", "0", "--replicaof", "127.0.0.1", port,
                             NULL};
    size_t used;
    memset(s, 0, sizeof(*s));
    s->replicas = replicas;
    snprintf(s->name, sizeof(s->name), "%s", name);
    if (test_redis_start(&s->primary, primary) < 0)
        return -1;
    snprintf(port, sizeof(port), "%d", s->primary.port);
    if (test_redis_start(&s->replica, replica) < 0 ||
        (replicas > 1 && test_redis_start(&s->replica2, replica) < 0))
        return -1;
    used = (size_t)snprintf(s->url, sizeof(s->url), "redis-sentinel://");
    for (int i = 0; i < TEST_SENTINELS; i++) {
        if (start_sentinel(&s->sentinels[i], name, s->primary.port, down_after_ms,
                           failover_timeout_ms) < 0) {
            fprintf(stderr, "cannot start a sentinel (see %s)\n", s->sentinels[i].dir);
            return -1;
        }
        used += (size_t)snprintf(s->url + used, sizeof(s->url) - used, "%s127.0.0.1:%d",
                                 i ? "," : "", s->sentinels[i].port);
    }
    snprintf(s->url + used, sizeof(s->url) - used, "/#%s", name);
    if (wait_until(sentinels_ready, s, READY_WAIT_MS) < 0) {
        fprintf(stderr, "the sentinels do not see the replica in sync\n");
        return -1;
    }
    return 0;
}

int test_sentinels_start(test_sentinels *s, const char *name)
{
    return start_sentinels(s, name, 1, 2000, 4000);
}

int test_sentinels_start_quick(test_sentinels *s, const char *name, int down_after_ms)
{
    return start_sentinels(s, name, 2, down_after_ms, 2000);
}

void test_sentinels_stop(test_sentinels *s)
{
    static const char *const files[] = {"sentinel.conf", "dump.rdb", NULL};
    for (int i = 0; i < TEST_SENTINELS; i++)
        remove_dir(&s->sentinels[i], files);
    remove_dir(&s->replica2, files);
    remove_dir(&s->replica, files);
    remove_dir(&s->primary, files);
}

int test_sentinels_primary_port(test_sentinels *s)
{
    for (int i = 0; i < TEST_SENTINELS; i++) {
        redisReply *r = test_command(s->sentinels[i].port, "SENTINEL GET-MASTER-ADDR-BY-NAME %s",
                                     s->name);
        int port = r && r->type == REDIS_REPLY_ARRAY && r->elements == 2
                       ? (int)strtol(r->element[1]->str, NULL, 10) : -1;
        freeReplyObject(r);
        if (port > 0)
            return port;
    }
    return -1;
}

test_redis *test_sentinels_server(test_sentinels *s, int port)
{
    return s->primary.port == port ? &s->primary
           : s->replica2.port == port ? &s->replica2
                                      : &s->replica;
}

int test_cluster_replica_of(const test_cluster *c, int master)
{
    for (int i = 0; i < TEST_CLUSTER_NODES; i++) {
        redisReply *r = test_command(c->nodes[i].port, "ROLE");
        int yes = r && r->type == REDIS_REPLY_ARRAY && r->elements >= 3 &&
                  strcmp(r->element[0]->str, "slave") == 0 &&
                  r->element[2]->integer == c->nodes[master].port;
        freeReplyObject(r);
        if (yes)
            return i;
    }
    return -1;
}

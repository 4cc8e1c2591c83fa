/* The dlock command, through the built binary, against a real redis-server:
 * the classic sequence, JSON, the exit codes and messages, terminals and
 * passwords. run's supervision contract: test_cli_run.c. */
#include "helpers.h"

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

/* The group's server: group_server, from the helpers. */
#define server group_server

static void test_cli_classic_sequence(void **state)
{
    redisContext *redis = *state;
    cli_proc p;
    char token[64];

    assert_int_equal(DLOCK(&p, 10000, "acquire", "cli:classic"), 0);
    assert_int_equal(strlen(p.out), 33);
    assert_int_equal(strspn(p.out, "0123456789abcdef"), 32);
    memcpy(token, p.out, 32);
    token[32] = '\0';

    assert_int_equal(DLOCK(&p, 10000, "acquire", "-n", "cli:classic"), 75);
    assert_non_null(strstr(p.err, "busy"));
    assert_int_equal(DLOCK(&p, 10000, "release", "cli:classic", "0123456789abcdef0123456789abcdef"),
                     1);
    assert_key_holds(redis, "cli:classic", token);

    assert_int_equal(DLOCK(&p, 10000, "status", "cli:classic"), 0);
    assert_non_null(strstr(p.out, "held by"));
    assert_int_equal(DLOCK(&p, 10000, "extend", "-t", "90", "cli:classic", token), 0);
    assert_true(pttl_of(redis, "cli:classic") > 60000);
    assert_int_equal(DLOCK(&p, 10000, "release", "cli:classic", token), 0);
    assert_false(key_exists(redis, "cli:classic"));
    assert_int_equal(DLOCK(&p, 10000, "status", "cli:classic"), 1);
    assert_non_null(strstr(p.out, "free"));
    assert_int_equal(DLOCK(&p, 10000, "extend", "cli:classic", token), 1);
}

static void test_cli_acquire_json(void **state)
{
    cli_proc p;
    (void)state;
    assert_int_equal(DLOCK(&p, 10000, "acquire", "--json", "-t", "5s", "cli:json"), 0);
    assert_non_null(strstr(p.out, "{\"name\":\"cli:json\",\"token\":\""));
    assert_non_null(strstr(p.out, "\"fence\":"));
    assert_non_null(strstr(p.out, "\"validity_ms\":"));
    assert_int_equal(DLOCK(&p, 10000, "status", "--json", "cli:json"), 0);
    assert_non_null(strstr(p.out, "\"held\":true"));
    assert_non_null(strstr(p.out, "\"holder\":{\"host\":"));
}

/* The string value of "field" in the JSON object `json`, unescaped to
 * UTF-8 (\uXXXX of the BMP included) into out, as a JSON parser would. */
static void json_string_field(const char *json, const char *field, char *out, size_t len)
{
    char key[64];
    const char *p;
    size_t n = 0;
    snprintf(key, sizeof(key), "\"%s\":\"", field);
    p = strstr(json, key);
    assert_non_null(p);
    for (p += strlen(key); *p != '"'; p++) {
        unsigned long c = (unsigned char)*p;
        assert_true(c >= 0x20 && n + 4 < len); /* no raw control characters */
        if (c == '\\' && p[1] == 'u') {
            char hex[5] = {p[2], p[3], p[4], p[5], '\0'};
            c = strtoul(hex, NULL, 16);
            p += 5;
        } else if (c == '\\') {
            c = (unsigned char)*++p;
        } else {
            out[n++] = (char)c; /* UTF-8 bytes pass as they are */
            continue;
        }
        if (c < 0x80) {
            out[n++] = (char)c;
        } else if (c < 0x800) {
            out[n++] = (char)(0xc0 | c >> 6);
            out[n++] = (char)(0x80 | (c & 0x3f));
        } else {
            out[n++] = (char)(0xe0 | c >> 12);
            out[n++] = (char)(0x80 | ((c >> 6) & 0x3f));
            out[n++] = (char)(0x80 | (c & 0x3f));
        }
    }
    out[n] = '\0';
}

/* --json is UTF-8: a UTF-8 name comes back as it is; a byte that is not
 * UTF-8 becomes U+FFFD and a control character is escaped. */
static void test_cli_json_is_utf8(void **state)
{
    static const char *const names[][2] = {
        {"cli:caf\xc3\xa9-\xe2\x82\xac", "cli:caf\xc3\xa9-\xe2\x82\xac"},
        {"cli:bad\xff\xc3(\x01", "cli:bad\xef\xbf\xbd\xef\xbf\xbd(\x01"},
    };
    char name[64];
    cli_proc p;
    (void)state;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        assert_int_equal(DLOCK(&p, 10000, "acquire", "--json", "-t", "5s", names[i][0]), 0);
        json_string_field(p.out, "name", name, sizeof(name));
        assert_string_equal(name, names[i][1]);
        assert_int_equal(DLOCK(&p, 10000, "status", "--json", names[i][0]), 0);
        json_string_field(p.out, "name", name, sizeof(name));
        assert_string_equal(name, names[i][1]);
    }
    assert_non_null(strstr(p.out, "\\u0001"));
}

static void test_cli_exit_codes(void **state)
{
    char url[96];
    cli_proc p;
    (void)state;

    /* 64: usage errors */
    assert_int_equal(DLOCK(&p, 10000, "run", "--bogus", "cli:x", "--", "true"), 64);
    assert_int_equal(DLOCK(&p, 10000, "run", "cli:x", "true"), 64);
    assert_int_equal(DLOCK(&p, 10000, "run", "-t", "10parsecs", "cli:x", "--", "true"), 64);
    assert_int_equal(DLOCK(&p, 10000, "run", "-t", "0", "cli:x", "--", "true"), 64);
    /* TTLs below the library's minimum are usage errors that name it, not 69 */
    assert_int_equal(DLOCK(&p, 10000, "run", "-t", "1ms", "cli:x", "--", "true"), 64);
    assert_non_null(strstr(p.err, "--ttl must be from 10 ms to 2147483647 ms"));
    assert_int_equal(DLOCK(&p, 10000, "acquire", "-t", "2ms", "cli:x"), 64);
    assert_non_null(strstr(p.err, "--ttl must be from 10 ms"));
    assert_int_equal(DLOCK(&p, 10000, "acquire", "-t", "600h", "cli:x"), 64);
    assert_int_equal(DLOCK(&p, 10000, "run", "--max-hold", "5ms", "cli:x", "--", "true"), 64);
    assert_non_null(strstr(p.err, "--max-hold must be at least 10 ms"));
    assert_int_equal(DLOCK(&p, 10000, "run", "-w", "200000000h", "cli:x", "--", "true"), 64);
    assert_int_equal(DLOCK(&p, 10000, "run", "--kill-after", "200000000h", "cli:x", "-c", ":"), 64);
    assert_int_equal(DLOCK(&p, 10000, "acquire"), 64);
    assert_int_equal(DLOCK(&p, 10000, "frobnicate"), 64);
    assert_int_equal(DLOCK(&p, 10000, "release", "cli:x", "not-a-token"), 64);
    assert_int_equal(DLOCK(&p, 10000, "run", "{x}:dlock:fence:x", "--", "true"), 64);
    assert_null(strstr(p.err, "Usage:")); /* a usage error is no help dump */
    /* ... that name the option as typed */
    assert_int_equal(DLOCK(&p, 10000, "extend", "-t"), 64);
    assert_non_null(strstr(p.err, "option '-t' needs a value"));
    assert_int_equal(DLOCK(&p, 10000, "run", "-Xn", "cli:x", "--", "true"), 64);
    assert_non_null(strstr(p.err, "unknown option '-X'"));
    assert_int_equal(DLOCK(&p, 10000, "status", "--ttl", "5s", "cli:x"), 64);
    assert_non_null(strstr(p.err, "unknown option '--ttl'"));
    assert_int_equal(DLOCK(&p, 10000, "-Xv", "status", "cli:x"), 64);
    assert_non_null(strstr(p.err, "unknown option '-X'"));
    assert_int_equal(DLOCK(&p, 10000, "acquire", "--ttl=1x", "cli:x"), 64);
    assert_non_null(strstr(p.err, "bad value '1x' for --ttl"));
    /* ... and say why a known one was refused */
    assert_int_equal(DLOCK(&p, 10000, "acquire", "--js=1", "cli:x"), 64);
    assert_non_null(strstr(p.err, "option '--json' takes no value"));
    assert_int_equal(DLOCK(&p, 10000, "acquire", "--re", "1", "cli:x"), 64);
    assert_non_null(strstr(p.err, "option '--re' is ambiguous: --replicas --restart-delay"));
    assert_int_equal(DLOCK(&p, 10000, "--tls=1", "status", "cli:x"), 64);
    assert_non_null(strstr(p.err, "option '--tls' takes no value"));
    assert_int_equal(DLOCK(&p, 10000, "--ver"), 64);
    assert_non_null(strstr(p.err, "option '--ver' is ambiguous: --verbose --version"));
    assert_int_equal(DLOCK(&p, 10000, "run", "-c", "true", "cli:x"), 64);
    assert_non_null(strstr(p.err, "option '-c' goes after NAME"));
    /* Options may follow the operands, except for run's (the command's). */
    assert_int_equal(DLOCK(&p, 10000, "acquire", "cli:late-opts", "-t", "1s", "--json"), 0);
    assert_non_null(strstr(p.out, "\"validity_ms\""));

    /* 75: busy, with -n and when the wait runs out; -E changes it */
    assert_int_equal(DLOCK(&p, 10000, "acquire", "cli:busy"), 0);
    assert_int_equal(DLOCK(&p, 10000, "run", "-n", "cli:busy", "--", "true"), 75);
    assert_int_equal(DLOCK(&p, 10000, "run", "-w", "300ms", "cli:busy", "--", "true"), 75);
    assert_true(p.took_ms >= 300);
    assert_int_equal(DLOCK(&p, 10000, "run", "-w", "0", "-E", "3", "cli:busy", "--", "true"), 3);

    /* 127, 126: the command */
    assert_int_equal(DLOCK(&p, 10000, "run", "cli:cmd", "--", "/no/such/command"), 127);
    assert_int_equal(DLOCK(&p, 10000, "run", "cli:cmd", "--", "/"), 126);

    /* 69: nobody listens, and -n does not wait for the server to come
     * (a wait does: test_wait_faults.c) */
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", test_free_port());
    {
        const char *args[] = {"acquire", "-n", "cli:down", NULL};
        assert_int_equal(cli_run(&p, url, args, 10000), 69);
        assert_true(p.took_ms < 5000LL * test_slowdown());
    }
}

/* An option in the wrong place is a usage error that says where it goes. */
static void test_cli_misplaced_options_get_a_hint(void **state)
{
    cli_proc p;
    (void)state;
    assert_int_equal(DLOCK(&p, 10000, "run", "-r", server.url, "cli:x", "--", "true"), 64);
    assert_non_null(strstr(p.err, "dlock: -r is a global option: put it before the command "
                                  "(dlock -r URL run ...)"));
    /* the value of --redis=URL may hold a password: not repeated */
    assert_int_equal(DLOCK(&p, 10000, "status", "--redis=redis://:pw-99@h", "cli:x"), 64);
    assert_non_null(strstr(p.err, "dlock: --redis is a global option: put it before the command "
                                  "(dlock --redis URL status ...)"));
    assert_null(strstr(p.err, "pw-99"));
    assert_int_equal(DLOCK(&p, 10000, "run", "cli:x", "-n", "--", "true"), 64);
    assert_non_null(strstr(p.err, "option '-n' after NAME: options go before NAME"));
    assert_int_equal(DLOCK(&p, 10000, "run", "cli:x", "-v", "--", "true"), 64);
    assert_non_null(strstr(p.err, "dlock: -v is a global option"));
    /* -h is every command's own */
    assert_int_equal(DLOCK(&p, 10000, "run", "-h"), 0);
}

/* A busy lock is described as status describes it: who holds it, since
 * when, and its TTL in seconds; "never expires" for a key without TTL. */
static void test_cli_busy_names_the_holder(void **state)
{
    redisContext *redis = *state;
    char want[320], host[256] = "";
    cli_proc holder, p;
    gethostname(host, sizeof(host) - 1);
    assert_int_equal(DLOCK(&holder, 10000, "acquire", "-t", "30", "cli:busy-who"), 0);
    assert_int_equal(DLOCK(&p, 10000, "acquire", "-n", "cli:busy-who"), 75);
    snprintf(want, sizeof(want), "dlock: cli:busy-who is busy: held by %s pid %ld since ", host,
             (long)holder.pid);
    assert_non_null(strstr(p.err, want));
    {
        const char *ttl = strstr(p.err, "Z, expires in ");
        char *end;
        double secs;
        assert_non_null(ttl);
        secs = strtod(ttl + 14, &end);
        assert_true(secs > 0 && secs <= 30.0);
        assert_int_equal(strncmp(end, " s\n", 3), 0);
        assert_int_equal(end[-2], '.'); /* one decimal */
    }
    assert_int_equal(DLOCK(&p, 10000, "status", "cli:busy-who"), 0);
    assert_non_null(strstr(p.out, want + strlen("dlock: cli:busy-who is busy: ")));
    {
        /* Quiet, it says nothing, and asks nothing more than the acquire. */
        long long before = script_calls(redis);
        assert_int_equal(DLOCK(&p, 10000, "-q", "acquire", "-n", "cli:busy-who"), 75);
        assert_string_equal(p.err, "");
        assert_int_equal(script_calls(redis) - before, 1);
    }

    freeReplyObject(run(redis, "SET cli:busy-forever x"));
    assert_int_equal(DLOCK(&p, 10000, "acquire", "-n", "cli:busy-forever"), 75);
    assert_non_null(strstr(p.err, "dlock: cli:busy-forever is busy: held by another client "
                                  "(no owner record), never expires (no TTL)\n"));
    assert_int_equal(DLOCK(&p, 10000, "status", "cli:busy-forever"), 0);
    assert_string_equal(p.out, "cli:busy-forever: held by another client (no owner record), "
                               "never expires (no TTL)\n");
}

/* extend says "not extended", release "not released". */
static void test_cli_refusals_name_what_was_refused(void **state)
{
    static const char *const stranger = "0123456789abcdef0123456789abcdef";
    cli_proc p;
    (void)state;
    assert_int_equal(DLOCK(&p, 10000, "extend", "cli:refused", stranger), 1);
    assert_non_null(strstr(p.err, "dlock: cli:refused: not extended: the token does not own"));
    assert_int_equal(DLOCK(&p, 10000, "release", "cli:refused", stranger), 1);
    assert_non_null(strstr(p.err, "dlock: cli:refused: not released: the token does not own"));
}

/* With -v, a wait is told even in a log: once when it starts, with the
 * holder, and at the end how long it took. */
static void test_cli_verbose_wait_in_a_log(void **state)
{
    cli_proc holder, p;
    char want[160];
    (void)state;
    assert_int_equal(DLOCK(&holder, 10000, "acquire", "-t", "700ms", "cli:logged"), 0);
    assert_int_equal(DLOCK(&p, 20000, "-v", "run", "-w", "20", "cli:logged", "--", "true"), 0);
    snprintf(want, sizeof(want), "dlock: waiting for cli:logged, held by ");
    assert_non_null(strstr(p.err, want));
    snprintf(want, sizeof(want), " pid %ld since ", (long)holder.pid);
    assert_non_null(strstr(p.err, want));
    assert_non_null(strstr(p.err, "dlock: acquired cli:logged after "));
    assert_null(strstr(p.err, "\033[K")); /* no status line: not a terminal */
    /* without -v: silent */
    assert_int_equal(DLOCK(&holder, 10000, "acquire", "-t", "500ms", "cli:logged"), 0);
    assert_int_equal(DLOCK(&p, 20000, "run", "-w", "20", "cli:logged", "--", "true"), 0);
    assert_string_equal(p.err, "");
}

/* A name that holds a hash is not a lock: status, acquire and run say so
 * in the same words (acquire used to take it for a semaphore's name). */
static void test_cli_status_of_a_hash(void **state)
{
    redisContext *redis = *state;
    cli_proc p;
    freeReplyObject(run(redis, "HSET cli:hash f v"));
    assert_int_equal(DLOCK(&p, 10000, "status", "cli:hash"), 69);
    assert_string_equal(p.err, "dlock: cli:hash holds a hash, not a lock (WRONGTYPE)\n");
    assert_int_equal(DLOCK(&p, 10000, "acquire", "-n", "cli:hash"), 69);
    assert_string_equal(p.err, "dlock: cli:hash holds a hash, not a lock (WRONGTYPE)\n");
    assert_int_equal(DLOCK(&p, 10000, "run", "-n", "cli:hash", "--", "true"), 69);
    assert_string_equal(p.err, "dlock: cli:hash holds a hash, not a lock (WRONGTYPE)\n");
}

/* status on three servers gives each failing one's reason. */
static void test_cli_status_says_why_a_node_failed(void **state)
{
    test_redis *second = start_servers(1);
    char urls[3][96], want[128];
    int down = test_free_port();
    cli_proc p;
    (void)state;
    snprintf(urls[0], sizeof(urls[0]), "%s", server.url);
    snprintf(urls[1], sizeof(urls[1]), "%s", second->url);
    snprintf(urls[2], sizeof(urls[2]), "redis://127.0.0.1:%d", down);
    {
        const char *args[] = {"-r", urls[0], "-r", urls[1], "-r", urls[2], "status", "cli:nodes",
                              NULL};
        assert_int_equal(cli_run(&p, NULL, args, 10000), 1);
    }
    snprintf(want, sizeof(want), "  127.0.0.1:%d: ", down);
    assert_non_null(strstr(p.out, want));
    assert_non_null(strstr(strstr(p.out, want), "Connection refused"));
    snprintf(want, sizeof(want), "127.0.0.1:%d: 127.0.0.1:%d", down, down);
    assert_null(strstr(p.out, want)); /* the server is named once */
}

/* On a terminal (a pty from script(1)), a waiting run says who holds the
 * lock and how long it has waited; elsewhere it stays silent. */
static void test_cli_waiting_status_line_on_a_terminal(void **state)
{
    char command[512];
    cli_proc p;
    (void)state;
    assert_int_equal(DLOCK(&p, 10000, "acquire", "-t", "20", "cli:tty"), 0);
    snprintf(command, sizeof(command), "%s run -w 2500ms cli:tty -- true", DLOCK_CLI_PATH);
    {
        pid_t pid;
        int out[2], status;
        char buf[4096] = "";
        size_t used = 0;
        ssize_t n;
        assert_int_equal(pipe(out), 0);
        pid = fork_child();
        if (pid == 0) {
            dup2(out[1], STDOUT_FILENO);
            dup2(out[1], STDERR_FILENO);
            setenv("DLOCK_REDIS", server.url, 1);
            execlp("script", "script", "-qec", command, "/dev/null", (char *)NULL);
            _exit(127);
        }
        close(out[1]);
        while ((n = read(out[0], buf + used, sizeof(buf) - 1 - used)) > 0)
            used += (size_t)n;
        buf[used] = '\0';
        close(out[0]);
        status = wait_child(pid);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 75);
        assert_non_null(strstr(buf, "waiting for cli:tty, held by"));
        assert_non_null(strstr(buf, " pid "));
    }
    assert_int_equal(DLOCK(&p, 10000, "run", "-w", "1500ms", "cli:tty", "--", "true"), 75);
    assert_null(strstr(p.err, "waiting for"));
}

static void test_cli_help_and_version(void **state)
{
    cli_proc p;
    (void)state;
    assert_int_equal(DLOCK(&p, 10000, "--help"), 0);
    assert_non_null(strstr(p.out, "Exit status:"));
    /* from the table in exit_codes.h, which the man page is checked against */
    assert_non_null(strstr(p.out, "\n  69   Redis unreachable or timed out, no quorum, or it refused"));
    assert_non_null(strstr(p.out, "\n  127  run: the command was not found\n"));
    assert_int_equal(DLOCK(&p, 10000, "run", "--help"), 0);
    assert_non_null(strstr(p.out, "--kill-after"));
    assert_int_equal(DLOCK(&p, 10000, "status", "--help"), 0);
    assert_int_equal(DLOCK(&p, 10000, "--version"), 0);
    assert_non_null(strstr(p.out, DLOCK_VERSION_STRING));
}

static void test_cli_password_never_shown(void **state)
{
    static const char *const server_args[] = {"--requirepass", "right-pw-42", NULL};
    test_redis *secured = start_server(server_args);
    char wrong[160], right[160];
    cli_proc p, *q;
    (void)state;
    snprintf(wrong, sizeof(wrong), "redis://:wrong-pw-17@127.0.0.1:%d", secured->port);
    snprintf(right, sizeof(right), "redis://:right-pw-42@127.0.0.1:%d", secured->port);
    {
        const char *args[] = {"-v", "-r", wrong, "run", "cli:pw", "--", "true", NULL};
        assert_int_equal(cli_run(&p, NULL, args, 10000), 77);
        assert_null(strstr(p.out, "wrong-pw-17"));
        assert_null(strstr(p.err, "wrong-pw-17"));
    }
    {
        const char *args[] = {"-r", wrong, "status", "cli:pw", NULL};
        assert_int_equal(cli_run(&p, NULL, args, 10000), 77);
        assert_null(strstr(p.err, "wrong-pw-17"));
    }
    {
        /* A password on the command line is overwritten in argv (ps), by
         * four stars that do not tell its length. */
        const char *args[] = {"-r", right, "run", "cli:pw", "--", "sleep", "1", NULL};
        char path[64], cmdline[4096], shown[200];
        FILE *f;
        size_t n;
        q = start_cli(NULL, args, NULL);
        usleep(500 * 1000);
        snprintf(path, sizeof(path), "/proc/%ld/cmdline", (long)q->pid);
        f = fopen(path, "r");
        assert_non_null(f);
        n = fread(cmdline, 1, sizeof(cmdline) - 1, f);
        fclose(f);
        for (size_t i = 0; i < n; i++)
            if (cmdline[i] == '\0')
                cmdline[i] = ' ';
        cmdline[n] = '\0';
        assert_null(strstr(cmdline, "right-pw-42"));
        snprintf(shown, sizeof(shown), " -r redis://:****@127.0.0.1:%d run cli:pw -- sleep 1",
                 secured->port);
        assert_non_null(strstr(cmdline, shown));
        assert_int_equal(cli_wait(q, 10000), 0);
    }
    {
        /* Credentials stay with dlock: the child sees neither the password
         * variable nor a server list that carries one. */
        const char *env[] = {"DLOCK_PASSWORD=right-pw-42", NULL};
        const char *args[] = {"run", "cli:pw3", "--", "sh", "-c",
                              "env | grep -c -e DLOCK_PASSWORD -e DLOCK_REDIS -e right-pw || true",
                              NULL};
        q = start_cli(right, args, env);
        assert_int_equal(cli_wait(q, 10000), 0);
        assert_string_equal(q->out, "0\n");
    }
    {
        /* The password from the environment works too. */
        const char *env[] = {"DLOCK_PASSWORD=right-pw-42", NULL};
        const char *args[] = {"acquire", "-t", "1", "cli:pw2", NULL};
        char url[96];
        snprintf(url, sizeof(url), "redis://127.0.0.1:%d", secured->port);
        assert_int_equal(cli_wait(start_cli(url, args, env), 10000), 0);
    }
}

/* The tests' scratch files live in the server's directory, and a stopped
 * server takes it with it: nothing is left in /tmp, not even what the server
 * itself wrote (an appendonlydir). */
static void test_cli_stopped_server_leaves_no_directory(void **state)
{
    const char *const aof[] = {"--appendonly", "yes", NULL};
    test_redis *own = start_server(aof);
    char path[256], dir[sizeof(own->dir)];
    struct stat st;
    (void)state;

    snprintf(dir, sizeof(dir), "%s", own->dir);
    scratch_path(path, sizeof(path), own->dir, "cli-scratch");
    write_number_file(path, 0);
    cleanup_now(own); /* stopped */
    assert_int_equal(stat(dir, &st), -1);
    assert_int_equal(errno, ENOENT);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup_group_redis, cleanup_teardown)
    const struct CMUnitTest tests[] = {
        T(test_cli_classic_sequence),
        T(test_cli_acquire_json),
        T(test_cli_json_is_utf8),
        T(test_cli_exit_codes),
        T(test_cli_misplaced_options_get_a_hint),
        T(test_cli_busy_names_the_holder),
        T(test_cli_refusals_name_what_was_refused),
        T(test_cli_verbose_wait_in_a_log),
        T(test_cli_status_of_a_hash),
        T(test_cli_status_says_why_a_node_failed),
        T(test_cli_waiting_status_line_on_a_terminal),
        T(test_cli_help_and_version),
        T(test_cli_password_never_shown),
        T(test_cli_stopped_server_leaves_no_directory),
    };
#undef T
    return cmocka_run_group_tests(tests, group_setup_server, group_teardown_server);
}

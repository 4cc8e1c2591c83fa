/* Runs the scripts of src/kinds/lua/ alone, as the build composed them, on
 * a real redis-server, from the cases of the tests/lua/ files KIND.cases: no library,
 * only EVALSHA and plain commands. The format is in tests/lua/README.md.
 *   lua_cases SCRIPTS_DIR FILE.cases...
 * Prints a line per case and "N passed, N failed"; exits 1 if any failed. */
#include "redis_server.h"

#include <ctype.h>
#include <errno.h>
#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_WORDS 48
#define MAX_LINE 4096
#define MAX_SCRIPTS 32

typedef struct word {
    char text[1024];
    bool quoted;
} word;

/* The server's clock around the last script call, in µs: what now_us and
 * now_ms match, also in the commands that look at what it wrote. */
typedef struct window {
    long long before_us, after_us;
} window;

typedef struct runner {
    redisContext *redis;
    const char *scripts_dir;
    char names[MAX_SCRIPTS][64], shas[MAX_SCRIPTS][41];
    int n_scripts;
    redisReply *last; /* the last command's reply, until an expectation reads it */
    int last_line;
    window when;
    char why[3 * MAX_LINE]; /* the current case's failure, or "" */
} runner;

/* ---- words ------------------------------------------------------------ */

/* One word from *p: bare up to a blank, '...' as it is, "..." with \\, \"
 * and \n. Returns false at the end of the line or on an open quote. */
static bool next_word(const char **p, word *w, bool *bad)
{
    const char *s = *p;
    size_t n = 0;
    while (*s == ' ' || *s == '\t')
        s++;
    if (!*s || *s == '\n')
        return false;
    w->quoted = *s == '\'' || *s == '"';
    if (w->quoted) {
        char q = *s++;
        while (*s && *s != q && n + 1 < sizeof(w->text)) {
            if (q == '"' && *s == '\\' && s[1]) {
                char c = *++s;
                if (c == 'n')
                    c = '\n';
                w->text[n++] = c;
                s++;
            } else {
                w->text[n++] = *s++;
            }
        }
        if (*s != q) {
            *bad = true;
            return false;
        }
        s++;
    } else {
        while (*s && !isspace((unsigned char)*s) && n + 1 < sizeof(w->text))
            w->text[n++] = *s++;
    }
    w->text[n] = '\0';
    *p = s;
    return true;
}

/* ---- replies ---------------------------------------------------------- */

/* The reply as an expectation would be written. Recursion is bounded:
 * hiredis nests replies at most 7 levels deep.
 * NOLINTNEXTLINE(misc-no-recursion) */
static void render(const redisReply *r, char *out, size_t cap)
{
    size_t n = strlen(out);
    if (n + 1 >= cap)
        return;
    switch (r->type) {
    case REDIS_REPLY_NIL:
        snprintf(out + n, cap - n, "nil");
        break;
    case REDIS_REPLY_INTEGER:
        snprintf(out + n, cap - n, "%lld", r->integer);
        break;
    case REDIS_REPLY_ERROR:
        snprintf(out + n, cap - n, "!%s", r->str);
        break;
    case REDIS_REPLY_ARRAY:
        snprintf(out + n, cap - n, "[");
        for (size_t i = 0; i < r->elements; i++) {
            if (i)
                strncat(out, ", ", cap - strlen(out) - 1);
            render(r->element[i], out, cap);
        }
        strncat(out, "]", cap - strlen(out) - 1);
        break;
    default: /* strings, status */
        snprintf(out + n, cap - n, "\"%s\"", r->str);
    }
}

/* The decimal integer (a sign, then digits) from s up to `stop` (NULL:
 * to the end of the string), and nothing else. */
static bool whole_number(const char *s, const char *stop, long long *out)
{
    char *end;
    errno = 0;
    *out = strtoll(s, &end, 10);
    return end != s && errno == 0 && (stop ? end == stop : *end == '\0');
}

/* An integer reply, or a string holding only a decimal integer. */
static bool number_of(const redisReply *r, long long *out)
{
    if (r && r->type == REDIS_REPLY_INTEGER) {
        *out = r->integer;
        return true;
    }
    return r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) &&
           whole_number(r->str, NULL, out);
}

static bool starts_with(const char *s, const char *prefix)
{
    size_t n = strlen(prefix);
    return strlen(s) >= n && memcmp(s, prefix, n) == 0;
}

static bool is_string(const redisReply *r, const char *s)
{
    return r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) &&
           strcmp(r->str, s) == 0;
}

static bool expect_value(const char **p, const redisReply *r, const window *w, bool *ok);

/* [a, b, ...] against an array reply (NULL: only read the text). The
 * recursion is as deep as the expectation's brackets.
 * NOLINTNEXTLINE(misc-no-recursion) */
static bool expect_array(const char **p, const redisReply *r, const window *w, bool *ok)
{
    size_t i = 0;
    bool is_array = r && r->type == REDIS_REPLY_ARRAY;
    (*p)++;
    while (**p == ' ')
        (*p)++;
    while (**p != ']') {
        const redisReply *e = is_array && i < r->elements ? r->element[i] : NULL;
        if (!expect_value(p, e, w, ok))
            return false;
        if (!e)
            *ok = false;
        i++;
        while (**p == ' ')
            (*p)++;
        if (**p == ',')
            (*p)++;
        else if (**p != ']')
            return false;
    }
    (*p)++;
    if (!is_array || i != r->elements)
        *ok = false;
    return true;
}

/* now_us or now_ms, maybe + or - N (`text`): against the server's clock
 * during the last script call. Returns false on bad syntax. */
static bool expect_now(const char *text, const redisReply *r, const window *w, bool *ok)
{
    long long got, lo = w->before_us, hi = w->after_us, plus = 0;
    bool ms = starts_with(text, "now_ms");
    if (!ms && !starts_with(text, "now_us"))
        return false;
    if (text[6] && !whole_number(text + 6, NULL, &plus))
        return false;
    if (ms) {
        lo /= 1000;
        hi /= 1000;
    }
    *ok = *ok && number_of(r, &got) && got >= lo + plus && got <= hi + plus;
    return true;
}

/* N or N..M (`text`): an integer reply N, or any number from N to M. */
static bool expect_number(const char *text, const redisReply *r, bool *ok)
{
    long long lo, hi, got;
    const char *dots = strstr(text, "..");
    if (dots) {
        if (!whole_number(text, dots, &lo) || !whole_number(dots + 2, NULL, &hi))
            return false;
        *ok = *ok && number_of(r, &got) && got >= lo && got <= hi;
        return true;
    }
    if (!whole_number(text, NULL, &lo))
        return false;
    *ok = *ok && r && r->type == REDIS_REPLY_INTEGER && r->integer == lo;
    return true;
}

/* One expected value from *p, matched against r: nil, *, N, N..M, now_us,
 * now_ms (+/-N), "text", 'text' or [...]. Returns false on bad syntax;
 * *ok becomes false on a mismatch.
 * NOLINTNEXTLINE(misc-no-recursion) */
static bool expect_value(const char **p, const redisReply *r, const window *w, bool *ok)
{
    word v = {.quoted = false};
    const char *s = *p;
    size_t n = 0;
    while (*s == ' ')
        s++;
    if (*s == '[') {
        *p = s;
        return expect_array(p, r, w, ok);
    }
    if (*s == '\'' || *s == '"') {
        bool bad = false;
        if (!next_word(&s, &v, &bad))
            return false;
        *ok = *ok && is_string(r, v.text);
        *p = s;
        return true;
    }
    while (s[n] && s[n] != ',' && s[n] != ']' && !isspace((unsigned char)s[n]) &&
           n + 1 < sizeof(v.text)) {
        v.text[n] = s[n];
        n++;
    }
    v.text[n] = '\0';
    *p = s + n;
    if (strcmp(v.text, "nil") == 0)
        *ok = *ok && r && r->type == REDIS_REPLY_NIL;
    else if (strcmp(v.text, "*") == 0)
        *ok = *ok && r && r->type != REDIS_REPLY_ERROR;
    else if (starts_with(v.text, "now_"))
        return expect_now(v.text, r, w, ok);
    else
        return expect_number(v.text, r, ok);
    return true;
}

/* ---- the runner ------------------------------------------------------- */

static void fail(runner *rn, int line, const char *what, const char *text)
{
    char got[MAX_LINE] = "";
    if (rn->why[0])
        return; /* a case reports its first failure */
    if (rn->last)
        render(rn->last, got, sizeof(got));
    snprintf(rn->why, sizeof(rn->why), "line %d: %s%s%s%s", line, what, text,
             rn->last ? ", got " : "", got);
}

static long long server_us(runner *rn)
{
    redisReply *t = redisCommand(rn->redis, "TIME");
    long long us = t && t->type == REDIS_REPLY_ARRAY && t->elements == 2
                       ? strtoll(t->element[0]->str, NULL, 10) * 1000000 +
                             strtoll(t->element[1]->str, NULL, 10)
                       : 0;
    freeReplyObject(t);
    return us;
}

/* The whole file at `path`, NUL-terminated (caller frees), or NULL. */
static char *read_text(const char *path)
{
    char *text = NULL;
    long size;
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (text = calloc(1, (size_t)size + 1)) && fread(text, 1, (size_t)size, f) != (size_t)size) {
        free(text);
        text = NULL;
    }
    fclose(f);
    return text;
}

/* The SHA1 of script `name` (SCRIPT LOAD of SCRIPTS_DIR/name.lua, once). */
static const char *script_sha(runner *rn, const char *name)
{
    char path[4096], *text;
    redisReply *r;
    int len;
    for (int i = 0; i < rn->n_scripts; i++)
        if (strcmp(rn->names[i], name) == 0)
            return rn->shas[i];
    len = snprintf(path, sizeof(path), "%s/%s.lua", rn->scripts_dir, name);
    if (rn->n_scripts == MAX_SCRIPTS || strlen(name) >= sizeof(rn->names[0]) || len < 0 ||
        (size_t)len >= sizeof(path) || !(text = read_text(path)))
        return NULL;
    r = redisCommand(rn->redis, "SCRIPT LOAD %s", text);
    free(text);
    if (!r || r->type != REDIS_REPLY_STRING || r->len != 40) {
        freeReplyObject(r);
        return NULL;
    }
    snprintf(rn->names[rn->n_scripts], sizeof(rn->names[0]), "%s", name);
    memcpy(rn->shas[rn->n_scripts], r->str, 41);
    freeReplyObject(r);
    return rn->shas[rn->n_scripts++];
}

/* A command's words as sent. */
typedef struct command {
    const char *argv[MAX_WORDS + 1];
    char numkeys[12];
    char clock[MAX_WORDS][24]; /* what a clock_us+N argument became */
    int argc;
} command;

#define CLOCK_ARG "clock_us+"

/* "eval NAME KEY... , ARG..." becomes EVALSHA SHA NUMKEYS KEY... ARG...,
 * where a bare argument clock_us+N is the server's clock in µs plus N;
 * false if there is no such script. */
static bool as_evalsha(runner *rn, const word *w, int n, command *cmd, int line)
{
    int keys = 0;
    const char *sha = n > 1 ? script_sha(rn, w[1].text) : NULL;
    if (!sha) {
        fail(rn, line, "no script ", n > 1 ? w[1].text : "named");
        return false;
    }
    while (2 + keys < n && (strcmp(w[2 + keys].text, ",") != 0 || w[2 + keys].quoted))
        keys++;
    snprintf(cmd->numkeys, sizeof(cmd->numkeys), "%d", keys);
    cmd->argv[0] = "EVALSHA";
    cmd->argv[1] = sha;
    cmd->argv[2] = cmd->numkeys;
    cmd->argc = 3;
    for (int i = 2; i < n; i++) {
        if (i == 2 + keys)
            continue;
        if (!w[i].quoted && starts_with(w[i].text, CLOCK_ARG)) {
            snprintf(cmd->clock[i], sizeof(cmd->clock[i]), "%lld",
                     server_us(rn) + strtoll(w[i].text + strlen(CLOCK_ARG), NULL, 10));
            cmd->argv[cmd->argc++] = cmd->clock[i];
        } else {
            cmd->argv[cmd->argc++] = w[i].text;
        }
    }
    return true;
}

/* A command line: runs it; its reply waits for an expectation. */
static void run_command(runner *rn, const word *w, int n, int line)
{
    command cmd = {.argc = n};
    bool script = strcmp(w[0].text, "eval") == 0;
    if (script && !as_evalsha(rn, w, n, &cmd, line))
        return;
    for (int i = 0; !script && i < n; i++)
        cmd.argv[i] = w[i].text;
    if (script) /* its clock is what now_* match */
        rn->when.before_us = server_us(rn);
    rn->last = redisCommandArgv(rn->redis, cmd.argc, cmd.argv, NULL);
    if (script)
        rn->when.after_us = server_us(rn);
    rn->last_line = line;
    if (!rn->last)
        fail(rn, line, "no reply: ", rn->redis->errstr);
}

/* A reply nobody expected must not be an error (a setup that failed). */
static void settle(runner *rn)
{
    if (rn->last && rn->last->type == REDIS_REPLY_ERROR)
        fail(rn, rn->last_line, "unexpected error", "");
    freeReplyObject(rn->last);
    rn->last = NULL;
}

static void run_expectation(runner *rn, const char *text, int line)
{
    bool ok = true;
    const char *p = text, *what = "expected ";
    if (!rn->last) {
        fail(rn, line, "nothing to expect from: ", text);
        return;
    }
    if (*text == '!')
        ok = rn->last->type == REDIS_REPLY_ERROR && starts_with(rn->last->str, text + 1);
    else if (!expect_value(&p, rn->last, &rn->when, &ok) || p[strspn(p, " ")])
        ok = false, what = "cannot read the expectation ";
    if (!ok)
        fail(rn, line, what, text);
    freeReplyObject(rn->last);
    rn->last = NULL;
}

/* ---- the files -------------------------------------------------------- */

typedef struct tally {
    int passed, failed;
} tally;

static void end_case(runner *rn, const char *title, const char *where, tally *t)
{
    if (!title[0])
        return;
    settle(rn);
    if (rn->why[0]) {
        printf("FAIL %s %s\n     %s\n", where, title, rn->why);
        t->failed++;
    } else {
        printf("ok   %s %s\n", where, title);
        t->passed++;
    }
}

/* A line of a case: a command, or "-> " and what its reply must be. */
static void run_line(runner *rn, const char *line, int number)
{
    word *w = calloc(MAX_WORDS, sizeof(*w));
    int n = 0;
    bool bad = false;
    if (strncmp(line, "-> ", 3) == 0) {
        run_expectation(rn, line + 3, number);
        free(w);
        return;
    }
    settle(rn);
    while (w && n < MAX_WORDS && next_word(&line, &w[n], &bad))
        n++;
    if (!w || bad || n == MAX_WORDS)
        fail(rn, number, "cannot read the command", "");
    else
        run_command(rn, w, n, number);
    free(w);
}

static void start_case(runner *rn, char *title, const char *text, const char *file, int number,
                       char *where, size_t where_cap)
{
    snprintf(title, MAX_LINE, "%s", text);
    snprintf(where, where_cap, "%s:%d", file, number);
    rn->why[0] = '\0';
    freeReplyObject(redisCommand(rn->redis, "FLUSHALL"));
}

static int run_file(runner *rn, const char *path, tally *t)
{
    char line[MAX_LINE], title[MAX_LINE] = "", where[1200] = "";
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    int number = 0, cases = t->passed + t->failed;
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "lua_cases: cannot read %s\n", path);
        return -1;
    }
    while (fgets(line, sizeof(line), f)) {
        number++;
        line[strcspn(line, "\n")] = '\0';
        if (!line[strspn(line, " ")] || line[0] == '#')
            continue;
        if (strncmp(line, "case ", 5) == 0) {
            end_case(rn, title, where, t);
            start_case(rn, title, line + 5, base, number, where, sizeof(where));
        } else if (!title[0]) {
            fprintf(stderr, "lua_cases: %s:%d: a line before the first case\n", path, number);
            fclose(f);
            return -1;
        } else {
            run_line(rn, line, number);
        }
    }
    end_case(rn, title, where, t);
    fclose(f);
    return t->passed + t->failed > cases ? 0 : -1;
}

int main(int argc, char **argv)
{
    test_redis server;
    runner rn = {0};
    tally t = {0, 0};
    int rc = 0;
    if (argc < 3) {
        fprintf(stderr, "usage: lua_cases SCRIPTS_DIR FILE.cases...\n");
        return 2;
    }
    if (test_redis_start(&server, NULL) != 0)
        return 1;
    rn.redis = test_redis_connect(&server, NULL);
    rn.scripts_dir = argv[1];
    for (int i = 2; rn.redis && i < argc; i++)
        rc |= run_file(&rn, argv[i], &t);
    if (rn.redis)
        redisFree(rn.redis);
    test_redis_stop(&server);
    printf("%d passed, %d failed\n", t.passed, t.failed);
    return rc || t.failed || !rn.redis ? 1 : 0;
}

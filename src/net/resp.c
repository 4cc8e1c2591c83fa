/* The only file that includes hiredis. hiredis 0.14 (Debian 12) is used as a
 * codec: its reader does no I/O. Note that hiredis aborts when its own
 * allocations (the read buffer) fail; our reply objects are allocated here
 * and fail cleanly. Commands are encoded here too (see below). */
#include "resp.h"

#include "server_text.h"

#include "dlock.h"

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct dlock__reader {
    redisReader *hiredis;
};

static void *attach(const redisReadTask *task, dlock__reply *r)
{
    if (task->parent) {
        dlock__reply *parent = task->parent->obj;
        parent->element[task->idx] = r;
    }
    return r;
}

static dlock__reply *new_reply(enum dlock__reply_type type)
{
    dlock__reply *r = calloc(1, sizeof(*r));
    if (r)
        r->type = type;
    return r;
}

static void *create_string(const redisReadTask *task, char *str, size_t len)
{
    enum dlock__reply_type type = task->type == REDIS_REPLY_ERROR    ? DLOCK__REPLY_ERROR
                                  : task->type == REDIS_REPLY_STATUS ? DLOCK__REPLY_STATUS
                                                                     : DLOCK__REPLY_STRING;
    dlock__reply *r = new_reply(type);
    if (!r)
        return NULL;
    r->str = malloc(len + 1);
    if (!r->str) {
        free(r);
        return NULL;
    }
    memcpy(r->str, str, len);
    r->str[len] = '\0';
    /* Every server error text enters here: no message quotes a script's
     * SHA1 or Lua line. */
    r->len = type == DLOCK__REPLY_ERROR ? dlock__server_text_clean(r->str) : len;
    return attach(task, r);
}

static void *create_array(const redisReadTask *task, int elements)
{
    dlock__reply *r;
    /* Refusing here makes the reader fail, which we report as EPROTO. */
    if (elements < 0 || elements > DLOCK__REPLY_ARRAY_MAX)
        return NULL;
    r = new_reply(DLOCK__REPLY_ARRAY);
    if (!r)
        return NULL;
    if (elements > 0) {
        r->element = calloc((size_t)elements, sizeof(dlock__reply *));
        if (!r->element) {
            free(r);
            return NULL;
        }
    }
    r->elements = (size_t)elements;
    return attach(task, r);
}

static void *create_integer(const redisReadTask *task, long long value)
{
    dlock__reply *r = new_reply(DLOCK__REPLY_INTEGER);
    if (!r)
        return NULL;
    r->integer = value;
    return attach(task, r);
}

static void *create_nil(const redisReadTask *task)
{
    dlock__reply *r = new_reply(DLOCK__REPLY_NIL);
    return r ? attach(task, r) : NULL;
}

static void free_object(void *obj)
{
    dlock__reply_free(obj);
}

static redisReplyObjectFunctions reply_functions = {
    create_string, create_array, create_integer, create_nil, free_object,
};

dlock__reader *dlock__reader_new(void)
{
    dlock__reader *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->hiredis = redisReaderCreateWithFunctions(&reply_functions);
    if (!r->hiredis) {
        free(r);
        return NULL;
    }
    return r;
}

void dlock__reader_free(dlock__reader *r)
{
    if (!r)
        return;
    redisReaderFree(r->hiredis);
    free(r);
}

int dlock__reader_feed(dlock__reader *r, const char *buf, size_t len)
{
    redisReader *h = r->hiredis;
    /* Replies to lock commands are small: a large backlog of unparsed bytes
     * means a broken or hostile peer, not a reply worth waiting for. */
    if (h->len - h->pos + len > DLOCK__REPLY_BYTES_MAX)
        return DLOCK_EPROTO;
    return redisReaderFeed(h, buf, len) == REDIS_OK ? 0 : DLOCK_EPROTO;
}

/* The reader stops inside a bulk string it has not all of, after its '$'
 * (hiredis 0.14, Debian's: the task stack is an array): one announced
 * larger than we would ever buffer is refused now, rather than waited for
 * until the deadline. */
static bool announces_huge_bulk(const redisReader *h)
{
    unsigned long long len = 0;
    if (h->ridx < 0 || h->rstack[h->ridx].type != REDIS_REPLY_STRING)
        return false;
    for (size_t i = h->pos; i < h->len && h->buf[i] >= '0' && h->buf[i] <= '9'; i++) {
        len = len * 10 + (unsigned long long)(h->buf[i] - '0');
        if (len > DLOCK__REPLY_BYTES_MAX)
            return true;
    }
    return false;
}

const char *dlock__reader_error(const dlock__reader *r)
{
    /* Our own refusals (an array too long) reach hiredis as out of memory. */
    return r->hiredis->err == REDIS_ERR_PROTOCOL ? r->hiredis->errstr : "";
}

int dlock__reader_next(dlock__reader *r, dlock__reply **out)
{
    void *reply = NULL;
    if (redisReaderGetReply(r->hiredis, &reply) != REDIS_OK)
        return DLOCK_EPROTO;
    if (!reply)
        return announces_huge_bulk(r->hiredis) ? DLOCK_EPROTO : 0;
    *out = reply;
    return 1;
}

/* Recursion is bounded: the reader nests at most a few levels. */
void dlock__reply_free(dlock__reply *reply) /* NOLINT(misc-no-recursion) */
{
    if (!reply)
        return;
    for (size_t i = 0; i < reply->elements; i++)
        dlock__reply_free(reply->element[i]);
    free(reply->element);
    free(reply->str);
    free(reply);
}

/* Writes `v` in decimal at `p`; returns the end. */
static char *put_decimal(char *p, size_t v)
{
    char digits[20];
    int n = 0;
    do
        digits[n++] = (char)('0' + v % 10);
    while ((v /= 10) > 0);
    while (n > 0)
        *p++ = digits[--n];
    return p;
}

static size_t decimal_width(size_t v)
{
    size_t w = 1;
    while (v >= 10) {
        v /= 10;
        w++;
    }
    return w;
}

/* Our own encoder rather than redisFormatCommandArgv: hiredis 0.14 formats
 * each length with sprintf (half of the client's CPU time in a lock cycle)
 * and aborts when malloc fails. */
long long dlock__command_format(char **out, int argc, const char **argv, const size_t *argvlen)
{
    size_t total;
    char *cmd, *p;
    if (argc <= 0)
        return DLOCK_EINVAL;
    total = 1 + decimal_width((size_t)argc) + 2;
    for (int i = 0; i < argc; i++)
        total += 1 + decimal_width(argvlen[i]) + 2 + argvlen[i] + 2;
    cmd = malloc(total);
    if (!cmd)
        return DLOCK_ENOMEM;
    p = cmd;
    *p++ = '*';
    p = put_decimal(p, (size_t)argc);
    *p++ = '\r';
    *p++ = '\n';
    for (int i = 0; i < argc; i++) {
        *p++ = '$';
        p = put_decimal(p, argvlen[i]);
        *p++ = '\r';
        *p++ = '\n';
        memcpy(p, argv[i], argvlen[i]);
        p += argvlen[i];
        *p++ = '\r';
        *p++ = '\n';
    }
    *out = cmd;
    return (long long)total;
}

void dlock__command_free(char *cmd)
{
    free(cmd);
}

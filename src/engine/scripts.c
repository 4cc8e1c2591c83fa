/* The Lua scripts, as EVALSHA and EVAL calls. Their text is in
 * src/kinds/lua/, one file per script, embedded at build time
 * (cmake/embed_lua.cmake). Redis does not roll back a script's earlier
 * writes when a later command fails, so each script does every read and
 * check (types, TIME) before its first write, and a release message goes
 * through redis.pcall. */
#include "scripts.h"

#include "dlock.h"
#include "lua_scripts.h"
#include "resp.h"
#include "slot.h"

#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_WORDS 32 /* EVALSHA, sha, numkeys, then up to 29 keys and arguments */

/* NULL-terminated: also the list a fresh connection loads. */
static const char *const sources[DLOCK__SCRIPT_COUNT + 1] = {
    [DLOCK__SCRIPT_ACQUIRE] = dlock__lua_mutex_acquire,
    [DLOCK__SCRIPT_RELEASE] = dlock__lua_mutex_release,
    [DLOCK__SCRIPT_EXTEND] = dlock__lua_mutex_extend,
    [DLOCK__SCRIPT_STATUS] = dlock__lua_mutex_status,
    [DLOCK__SCRIPT_FENCE_MAX] = dlock__lua_fence_max,
    [DLOCK__SCRIPT_SEM_ACQUIRE] = dlock__lua_sem_acquire,
    [DLOCK__SCRIPT_SEM_RELEASE] = dlock__lua_sem_release,
    [DLOCK__SCRIPT_SEM_EXTEND] = dlock__lua_sem_extend,
    [DLOCK__SCRIPT_SEM_STATUS] = dlock__lua_sem_status,
    [DLOCK__SCRIPT_FAIR_ACQUIRE] = dlock__lua_fair_acquire,
    [DLOCK__SCRIPT_FAIR_RELEASE] = dlock__lua_fair_release,
    [DLOCK__SCRIPT_SHARED_ACQUIRE] = dlock__lua_shared_acquire,
    [DLOCK__SCRIPT_SHARED_RELEASE] = dlock__lua_shared_release,
    [DLOCK__SCRIPT_SHARED_EXTEND] = dlock__lua_shared_extend,
    [DLOCK__SCRIPT_SHARED_STATUS] = dlock__lua_shared_status,
    [DLOCK__SCRIPT_COUNT] = NULL};

/* The scripts that read a key named as KEYS[1] as absent (helpers.lua,
 * present_key()): the status scripts, which write nothing, and the
 * releases: the waiting writers and the waiters' queue are often absent,
 * and an adopted handle's mutex release names keys a semaphore or shared
 * holders lack (the other keys live while a holder does). */
static const bool names_absent[DLOCK__SCRIPT_COUNT] = {[DLOCK__SCRIPT_STATUS] = true,
                                                       [DLOCK__SCRIPT_RELEASE] = true,
                                                       [DLOCK__SCRIPT_SEM_STATUS] = true,
                                                       [DLOCK__SCRIPT_SHARED_STATUS] = true,
                                                       [DLOCK__SCRIPT_SHARED_RELEASE] = true,
                                                       [DLOCK__SCRIPT_SEM_RELEASE] = true,
                                                       [DLOCK__SCRIPT_FAIR_RELEASE] = true};

/* The status scripts among them, which write nothing. */
static const bool reads_only[DLOCK__SCRIPT_COUNT] = {[DLOCK__SCRIPT_STATUS] = true,
                                                     [DLOCK__SCRIPT_SEM_STATUS] = true,
                                                     [DLOCK__SCRIPT_SHARED_STATUS] = true};

const char *const *dlock__script_sources(void)
{
    return sources;
}
static char shas[DLOCK__SCRIPT_COUNT][41];
static pthread_once_t shas_once = PTHREAD_ONCE_INIT;

static void compute_shas(void)
{
    for (int i = 0; i < DLOCK__SCRIPT_COUNT; i++) {
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int len = 0;
        if (!EVP_Digest(sources[i], strlen(sources[i]), md, &len, EVP_sha1(), NULL))
            len = 0; /* an empty SHA only costs a NOSCRIPT and the EVAL fallback */
        for (unsigned int j = 0; j < len && j < 20; j++)
            snprintf(&shas[i][(size_t)j * 2], 3, "%02x", md[j]);
    }
}

const char *dlock__script_source(enum dlock__script_id id)
{
    return sources[id];
}

const char *dlock__script_sha(enum dlock__script_id id)
{
    pthread_once(&shas_once, compute_shas);
    return shas[id];
}

static long long encode(char **out, const char *verb, const char *body, int nkeys,
                        const char *const *keys, int nargs, const char *const *args)
{
    const char *argv[MAX_WORDS];
    size_t lens[MAX_WORDS];
    char numkeys[12];
    int argc = 0;

    if (3 + nkeys + nargs > MAX_WORDS)
        return DLOCK_EINVAL;
    snprintf(numkeys, sizeof(numkeys), "%d", nkeys);
    argv[argc++] = verb;
    argv[argc++] = body;
    argv[argc++] = numkeys;
    for (int i = 0; i < nkeys; i++)
        argv[argc++] = keys[i];
    for (int i = 0; i < nargs; i++)
        argv[argc++] = args[i];
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    return dlock__command_format(out, argc, argv, lens);
}

static int encode_eval(dlock__call *call)
{
    dlock__script_call *sc = (dlock__script_call *)call;
    long long len = encode(&call->fallback, "EVAL", sources[sc->id], sc->nkeys, sc->named,
                           sc->nargs, sc->args);
    if (len < 0)
        return (int)len;
    call->fallback_len = (size_t)len;
    return 0;
}

static int encode_evalsha(dlock__script_call *sc)
{
    long long len = encode(&sc->call.cmd, "EVALSHA", dlock__script_sha(sc->id), sc->nkeys,
                           sc->named, sc->nargs, sc->args);
    if (len < 0)
        return (int)len;
    sc->call.len = (size_t)len;
    return 0;
}

/* Whether some of the keys after the first exist (absent[i] false). */
static bool others_exist(const bool *absent, int nkeys)
{
    for (int i = 1; i < nkeys; i++)
        if (!absent[i])
            return true;
    return false;
}

/* Names the keys marked in absent[0..nkeys) as the first (none: every
 * key as given) and encodes the call again. When the first exists
 * nowhere, the name is free and every key is named as the first: a call
 * of one key that does not exist is served by the importing node (ASK),
 * where a release finds nothing of ours. A status would read the keys
 * that exist (a free mutex's last fence) as absent: it goes on as given
 * then (nonzero). */
static int name_absent(dlock__call *call, const bool *absent)
{
    dlock__script_call *sc = (dlock__script_call *)call;
    bool free_name = absent && absent[0];
    char *was = call->cmd;
    int rc;
    if (free_name && reads_only[sc->id] && others_exist(absent, sc->nkeys))
        return DLOCK_ESERVER;
    for (size_t i = 0; i < (size_t)sc->nkeys; i++)
        sc->named[i] = absent && (absent[i] || free_name) ? sc->keys[0] : sc->keys[i];
    rc = encode_evalsha(sc);
    if (rc < 0) {
        for (size_t i = 0; i < (size_t)sc->nkeys; i++)
            sc->named[i] = sc->keys[i];
        call->cmd = was; /* the call goes on as given */
        return rc;
    }
    dlock__command_free(was);
    dlock__command_free(call->fallback);
    call->fallback = NULL;
    call->fallback_len = 0;
    return 0;
}

int dlock__script_encode(dlock__script_call *sc, enum dlock__script_id id, int nkeys,
                       const char *const *keys, int nargs, const char *const *args)
{
    int rc;
    memset(sc, 0, sizeof(*sc));
    if (nkeys < 0 || nkeys > DLOCK__SCRIPT_KEYS_MAX)
        return DLOCK_EINVAL;
    for (int i = 0; i < nkeys; i++)
        sc->named[i] = keys[i];
    sc->id = id;
    sc->nkeys = nkeys;
    sc->keys = keys;
    sc->nargs = nargs;
    sc->args = args;
    if ((rc = encode_evalsha(sc)) < 0)
        return rc;
    /* All keys of a name share its slot: the first one tells. */
    sc->call.slot = nkeys > 0 ? (int)dlock__key_slot(keys[0], strlen(keys[0])) : -1;
    /* The EVAL form, script text and all, is only encoded after a NOSCRIPT. */
    sc->call.encode_fallback = encode_eval;
    if (names_absent[id] && nkeys > 1) {
        sc->call.keys = keys;
        sc->call.nkeys = (size_t)nkeys;
        sc->call.name_absent = name_absent;
    }
    return 0;
}

void dlock__script_call_free(dlock__script_call *sc)
{
    dlock__command_free(sc->call.cmd);
    dlock__command_free(sc->call.fallback);
    memset(sc, 0, sizeof(*sc));
}

/* The registry of kinds: every kind there is, one line each, and what is
 * looked up across them. A new kind adds its line here. */
#include "kinds.h"

#include <pthread.h>
#include <stdio.h>

static const dlock__kind *const kinds[] = {
    &dlock__kind_mutex, &dlock__kind_mutex_try, &dlock__kind_mutex_queued, &dlock__kind_semaphore,
    &dlock__kind_fair,  &dlock__kind_shared,
};

#define KINDS (sizeof(kinds) / sizeof(kinds[0]))

static const char *scripts[DLOCK__SCRIPT_COUNT + 1];
static pthread_once_t scripts_once = PTHREAD_ONCE_INIT;

/* In the order of their ids, each once. */
static void list_scripts(void)
{
    bool used[DLOCK__SCRIPT_COUNT] = {[DLOCK__SCRIPT_FENCE_MAX] = true};
    size_t n = 0;
    for (size_t i = 0; i < KINDS; i++) {
        used[kinds[i]->acquire] = used[kinds[i]->release] = true;
        used[kinds[i]->extend] = used[kinds[i]->status] = true;
    }
    for (int id = 0; id < DLOCK__SCRIPT_COUNT; id++)
        if (used[id])
            scripts[n++] = dlock__script_source((enum dlock__script_id)id);
}

const char *const *dlock__kinds_scripts(void)
{
    pthread_once(&scripts_once, list_scripts);
    return scripts;
}

const dlock__kind *dlock__kinds_adopted_on(int rc)
{
    for (size_t i = 0; i < KINDS; i++)
        if (rc != 0 && kinds[i]->adopted_on == rc)
            return kinds[i];
    return NULL;
}

const dlock__kind *dlock__kinds_reading(const char *type, bool owned)
{
    for (size_t i = 0; i < KINDS; i++)
        if (kinds[i]->reads && kinds[i]->reads(type, owned))
            return kinds[i];
    return NULL;
}

const dlock__kind *dlock__kinds_found(const dlock_status *st, char *out, size_t len)
{
    for (size_t i = 0; i < KINDS; i++)
        if (kinds[i]->found && kinds[i]->found(st, out, len))
            return kinds[i];
    return NULL;
}

void dlock__kinds_describe(const dlock__claim *cl, char *out, size_t len)
{
    if (cl->kind->describe)
        cl->kind->describe(cl, out, len);
    else
        snprintf(out, len, "a %s", cl->kind->name);
}

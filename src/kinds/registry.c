/* The registry of kinds: every kind there is, one line each, and what is
 * looked up across them. A new kind adds its line here. */
#include "kinds.h"

#include <pthread.h>

static const dlock__kind *const kinds[] = {
    &dlock__kind_mutex, &dlock__kind_mutex_try, &dlock__kind_semaphore, &dlock__kind_fair,
    &dlock__kind_shared,
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

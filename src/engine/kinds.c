/* The kinds of claim: which scripts each primitive sends (see dlock__kind
 * in attempt.h). A new primitive adds its table here and its scripts in
 * scripts.c. */
#include "attempt.h"

const dlock__kind dlock__kind_mutex = {
    .acquire = DLOCK__SCRIPT_ACQUIRE,
    .release = DLOCK__SCRIPT_RELEASE,
    .extend = DLOCK__SCRIPT_EXTEND,
    .status = DLOCK__SCRIPT_STATUS,
    .aux = {NULL},
    .limited = false,
};

/* The counting semaphore: NAME is a sorted set of permits (scripts.c). */
const dlock__kind dlock__kind_semaphore = {
    .acquire = DLOCK__SCRIPT_SEM_ACQUIRE,
    .release = DLOCK__SCRIPT_SEM_RELEASE,
    .extend = DLOCK__SCRIPT_SEM_EXTEND,
    .status = DLOCK__SCRIPT_SEM_STATUS,
    .aux = {"limit", "slots", "owners", "fences", NULL},
    .limited = true,
};

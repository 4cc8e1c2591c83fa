/* dlock_strerror() and dlock_err_name(): the public names of base's table
 * lookups, which the layers below the API call themselves. */
#include "error_text.h"

const char *dlock_strerror(int code)
{
    return dlock__error_text(code);
}

const char *dlock_err_name(int code)
{
    return dlock__error_name(code);
}

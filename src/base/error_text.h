/* What each code of dlock.h's table says, for every layer: the API's
 * dlock_strerror() and dlock_err_name() (api/errors.c) return these. */
#ifndef DLOCK_ERROR_TEXT_H
#define DLOCK_ERROR_TEXT_H

#include "dlock.h"

/* "success", the table's text, or "unknown error". */
const char *dlock__error_text(int code);

/* "DLOCK_OK", "DLOCK_" and the table's name, or "DLOCK_UNKNOWN". */
const char *dlock__error_name(int code);

#endif

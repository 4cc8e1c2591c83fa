/* The text and the name of each code, from the table in dlock.h. */
#include "error_text.h"

const char *dlock__error_text(int code)
{
    switch (code) {
    case DLOCK_OK:
        return "success";
#define DLOCK_XX_TEXT(name, value, text)                                                           \
    case DLOCK_##name:                                                                             \
        return text;
        DLOCK_ERROR_MAP(DLOCK_XX_TEXT)
#undef DLOCK_XX_TEXT
    default:
        return "unknown error";
    }
}

const char *dlock__error_name(int code)
{
    switch (code) {
    case DLOCK_OK:
        return "DLOCK_OK";
#define DLOCK_XX_NAME(name, value, text)                                                           \
    case DLOCK_##name:                                                                             \
        return "DLOCK_" #name;
        DLOCK_ERROR_MAP(DLOCK_XX_NAME)
#undef DLOCK_XX_NAME
    default:
        return "DLOCK_UNKNOWN";
    }
}

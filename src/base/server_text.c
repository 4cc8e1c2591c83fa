/* Script internals out of server error texts. See server_text.h. */
#include "server_text.h"

#include <ctype.h>
#include <string.h>

#define SHA1_HEX 40

/* The length of `word` at s if s starts with it, else 0. */
static size_t word_at(const char *s, const char *word)
{
    size_t len = strlen(word);
    return strncmp(s, word, len) == 0 ? len : 0;
}

/* The length of the SHA1 in hex at s (SHA1_HEX), else 0. */
static size_t sha_at(const char *s)
{
    for (size_t i = 0; i < SHA1_HEX; i++)
        if (!isxdigit((unsigned char)s[i]))
            return 0;
    return SHA1_HEX;
}

/* The length of "user_script:N" at s ('@' before it included), else 0. */
static size_t line_at(const char *s)
{
    size_t at = word_at(s, "@user_script:");
    size_t digits;
    if (!at)
        at = word_at(s, "user_script:");
    if (!at)
        return 0;
    digits = strspn(s + at, "0123456789");
    return digits ? at + digits : 0;
}

/* The length of the script's internals that start at s, else 0. */
static size_t internals_at(const char *s)
{
    size_t n, len;
    /* Redis 7: " script: SHA1, on @user_script:N." */
    if ((n = word_at(s, " script: ")) && (len = sha_at(s + n)) &&
        word_at(s + n + len, ", on ")) {
        n += len + 5;
        len = line_at(s + n);
        return len ? n + len + (s[n + len] == '.') : 0;
    }
    /* Redis 6: "Error running script (call to f_SHA1): " */
    if ((n = word_at(s, "Error running script (call to f_")) && (len = sha_at(s + n)) &&
        word_at(s + n + len, "): "))
        return n + len + 3;
    /* The failing line: "@user_script:N: " */
    if ((len = line_at(s)) && word_at(s + len, ": "))
        return len + 2;
    return 0;
}

size_t dlock__server_text_clean(char *s)
{
    size_t from = 0, to = 0;
    while (s[from]) {
        size_t skip = internals_at(s + from);
        if (skip)
            from += skip;
        else
            s[to++] = s[from++];
    }
    s[to] = '\0';
    return to;
}

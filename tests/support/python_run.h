/* Runs a checking script under Debian's /usr/bin/python3, without a shell:
 * for the tests that let a real parser read what dlock wrote. */
#ifndef TEST_PYTHON_RUN_H
#define TEST_PYTHON_RUN_H

/* Runs `script` with the arguments args[0..] (NULL-terminated); its
 * standard output, malloc'ed, in *out. Returns its wait status. */
int python_run(const char *script, const char *const *args, char **out);

#endif

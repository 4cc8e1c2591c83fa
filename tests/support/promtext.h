/* Prometheus text as a real parser reads it: tests/metrics/promtext.py,
 * which uses prometheus_client (Debian's python3-prometheus-client, under
 * Debian's /usr/bin/python3). */
#ifndef TEST_PROMTEXT_H
#define TEST_PROMTEXT_H

/* What the parser understood of `text` (promtext.py's lines), malloc'ed;
 * fails the test if it does not parse or breaks the format's rules. */
char *promtext_parse(const char *text);

/* The same for the text in the file at `path`. */
char *promtext_parse_file(const char *path);

/* The value of the sample `sample` (as promtext.py prints it, e.g.
 * `dlock_busy_total{name="a"}`) in `parsed`, or -1 if there is none. */
double promtext_value(const char *parsed, const char *sample);

/* The same for a sample that counts: a whole number (the test fails if it
 * is not), or -1. */
long long promtext_count(const char *parsed, const char *sample);

#endif

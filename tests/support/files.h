/* Scratch files of the tests, in a test server's directory (removed with
 * it), and the numbers that children write into them. */
#ifndef TEST_FILES_H
#define TEST_FILES_H

#include <stddef.h>

/* DIR/NAME into `path`, with any file of that name removed. */
void scratch_path(char *path, size_t len, const char *dir, const char *name);

/* The same in group_server's directory. */
void scratch(char *path, size_t len, const char *name);

/* Writes `value` and a newline to `path`, or fails the test. */
void write_number_file(const char *path, long value);

/* The number a file starts with, or -1 if it is missing or empty. */
long read_number_file(const char *path);

/* Waits until the file at `path` holds a number (a child wrote it), at most
 * 10 s (times the slowdown); the number, or -1. */
long wait_for_number(const char *path);

/* Adds 1 to the number in `path`, slowly: a caller that is not alone in
 * this read-modify-write loses an update. Safe to call from any thread. */
void bump_number_file(const char *path);

#endif

/* Fatal input errors: one line "PROGRAM: error: ..." on stderr, exit status 2. */
#ifndef CLIMIO_FAIL_H
#define CLIMIO_FAIL_H

#define CLIMIO_EXIT_USAGE 2

/* Name used in front of every message (set once in main). */
void fail_set_program(const char *name);
const char *fail_program(void);

/* Print "PROGRAM: error: <formatted message>" and exit(2). */
void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif

/* Process signals of the long-running commands (`run`, `replay` and
 * `verify`): SIGTERM and SIGINT ask to stop, SIGHUP to reload the
 * configuration. The handlers only count into sig_atomic_t flags; the main
 * loop of the command polls them (signals_stop_count, signals_take_reload)
 * and does the work itself, so nothing but an assignment runs in a handler.
 *
 * Why counting stop signals: `run` stops gracefully on the first and gives
 * up waiting for the store on the second.
 *
 * Threads: the flags are process-wide. Install and read them from the one
 * thread that runs the command's main loop; other threads (librdkafka's, the
 * writer, the HTTP server) neither read nor reset them. */
#ifndef SIGNALS_H
#define SIGNALS_H

#include <stdbool.h>

enum {
  SIGNALS_STOP = 1u,        /* SIGTERM, SIGINT: counted (signals_stop_count) */
  SIGNALS_RELOAD = 2u,      /* SIGHUP: flagged (signals_take_reload); without it SIGHUP keeps its disposition */
  SIGNALS_IGNORE_PIPE = 4u, /* SIGPIPE ignored: a peer that went away is an error return, not a death */
};

/* Installs the handlers for `which` (SIGNALS_* ORed) and clears the flags:
 * signals that came before this call are not the caller's to act on (tests
 * run several commands in one process). */
void signals_install(unsigned which);

/* Stop signals received since signals_install (0 = keep going). */
int signals_stop_count(void);

/* The first stop signal received since signals_install (SIGTERM or
 * SIGINT), 0 = none: a command that stops on it exits 128 + that number,
 * as a shell reports a process the signal killed. */
int signals_stop_signal(void);

/* True once per SIGHUP (several before a call count as one). */
bool signals_take_reload(void);

#endif

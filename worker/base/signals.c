#include "signals.h"

#include <signal.h>
#include <string.h>

static volatile sig_atomic_t g_stop, g_reload, g_first;

static void on_signal(int sig) {
  if (sig == SIGHUP)
    g_reload = 1;
  else if (g_stop < 1000) { /* a storm of signals never wraps the counter */
    if (!g_stop) g_first = sig;
    g_stop++;
  }
}

static void handle(int sig) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(sig, &sa, NULL);
}

void signals_install(unsigned which) {
  g_stop = 0;
  g_first = 0;
  g_reload = 0;
  if (which & SIGNALS_STOP) {
    handle(SIGTERM);
    handle(SIGINT);
  }
  if (which & SIGNALS_RELOAD) handle(SIGHUP);
  if (which & SIGNALS_IGNORE_PIPE) signal(SIGPIPE, SIG_IGN);
}

int signals_stop_count(void) { return g_stop; }

int signals_stop_signal(void) { return g_stop ? g_first : 0; }

bool signals_take_reload(void) {
  if (!g_reload) return false;
  g_reload = 0;
  return true;
}

/* The start-up check of the change topic for the commands that write to
 * the store outside `run`: `replay` into the store (from the topics or from
 * --input) and `verify --repair` announce their writes there too (SPEC.md
 * section 5, "Change events"), so with changes.topic set that topic must
 * exist before anything is read or written, as it must for `run`
 * (kafka_check_topics). Their command topics, when they read topics, are
 * checked by the replay's own consumer (replay_source.h); a replay to
 * --output announces nothing and contacts no broker for this.
 *
 * Above config.h and kafka.h; cli_replay.c and cli_verify.c call it after
 * log_setup and before the command starts. */
#ifndef PREFLIGHT_H
#define PREFLIGHT_H

#include "config/config.h"

/* With changes.topic empty: 0 at once, contacting nothing. Otherwise asks
 * the brokers whether the change topic exists, waiting for them as `run`
 * does (socket.connection.setup.timeout.ms, 30 s by default): 0 when it
 * does; 1 with one error log line naming it (or why the brokers did not
 * say); 128 + the signal when SIGTERM or SIGINT came during the wait
 * (logged as "COMMAND: interrupted"). Installs the stop handlers
 * (signals.h) for the wait: the command installs its own afterwards. */
int preflight_changes(const config_t *cfg, const char *command);

#endif

/* Help texts from the command table. See cli_help.h. */
#include "cli_help.h"

#include <string.h>

#include "buf.h"

/* The option column: options and their argument, padded to this width. */
#define HELP_OPT_WIDTH 28
/* Synopsis lines wrap before this column. */
#define HELP_WRAP 100

static const char help_intro[] =
    "aggregator: merges the assignment commands of Kafka topics into one MongoDB document per assignment.\n";

static const char help_notes[] =
    "A value follows its option, or joins it with '=' (--from=2026-01-01T00:00:00Z).\n"
    "A FILE|- argument takes - for standard input (--input) or standard output (--output, --rejects).\n"
    "--from and --until select messages of the topics by their Kafka timestamp (set by the producer, or by\n"
    "the broker when the topic says so), not by any time inside a command; not with --input.\n"
    "--rejects FILE keeps the lines of --input that are not valid commands, one JSON object per line with\n"
    "the line number (from 1), the error code and a detail.\n"
    "Configuration, lowest first: defaults, the -c FILE, AGGREGATOR_<SECTION>_<KEY> variables, --set;\n"
    "`aggregator config describe` lists every key, and docs/CONFIG.md is the reference.\n"
    "Exit status: 0 success, 1 runtime failure, 2 usage or configuration error, 3 drift found (verify).\n";

static void opt_label(const cli_opt_t *p, model_buf_t *b) {
  size_t start = b->len;
  model_buf_printf(b, "  %s%s%s%s%s", p->alias ? p->alias : "", p->alias ? ", " : "", p->name, p->arg ? " " : "",
                   p->arg ? p->arg : "");
  size_t w = b->len - start;
  if (w + 2 > HELP_OPT_WIDTH) {
    model_buf_printf(b, "\n%*s", HELP_OPT_WIDTH, "");
    return;
  }
  model_buf_printf(b, "%*s", (int)(HELP_OPT_WIDTH - w), "");
}

/* "run, replay, verify, config" for the commands whose bits are set. */
static void commands_of(unsigned bits, model_buf_t *b) {
  const char *sep = "";
  for (size_t i = 0; i < cli_cmds_count; i++) {
    const cli_cmd_t *c = &cli_cmds[i];
    if (!(bits & c->bit)) continue;
    if ((c->bit & CLI_CONFIG_ACTIONS) && (bits & CLI_CONFIG_ACTIONS) == CLI_CONFIG_ACTIONS) {
      if (c->bit != CLI_CHECK) continue; /* all three actions: "config" once */
      model_buf_printf(b, "%sconfig", sep);
    } else {
      model_buf_printf(b, "%s%s", sep, c->name);
    }
    sep = ", ";
  }
}

/* "usage: aggregator replay [-c FILE] ...", wrapped. */
static void synopsis(const cli_cmd_t *c, model_buf_t *b) {
  size_t line = b->len;
  model_buf_printf(b, "usage: aggregator %s%s%s", c->name, *c->args ? " " : "", c->args);
  unsigned bits = c->bit ? c->bit : !strcmp(c->name, "config") ? CLI_CONFIG_ACTIONS : 0;
  if (!c->bit && bits) {
    model_buf_puts(b, " [OPTIONS]\n");
    return;
  }
  for (size_t i = 0; i < cli_opts_count; i++) {
    const cli_opt_t *p = &cli_opts[i];
    if (!(p->commands & bits)) continue;
    char item[96];
    snprintf(item, sizeof item, "[%s%s%s%s]", p->alias ? p->alias : p->name, p->arg ? " " : "", p->arg ? p->arg : "",
             p->kind == CLI_OPT_LIST ? " ..." : "");
    if (b->len - line + 1 + strlen(item) > HELP_WRAP) {
      model_buf_putc(b, '\n');
      line = b->len;
      model_buf_printf(b, "%*s", (int)strlen("usage: aggregator ") + (int)strlen(c->name), "");
    }
    model_buf_printf(b, " %s", item);
  }
  model_buf_putc(b, '\n');
}

static void help_row(model_buf_t *b) { model_buf_printf(b, "  %-*s%s\n", HELP_OPT_WIDTH - 2, "-h, --help", "this help"); }

/* The options any of bits accepts, one line each. With `grouped`, under a
 * heading naming the commands that take them (rows with the same commands
 * are adjacent in the table). With `help`, the -h/--help line too: every
 * command of bits takes it, so it closes the group of the options that all
 * of them take (or a group of its own when no row is common to all): under
 * a narrower heading it would say that only some of them do. */
static void options_of(unsigned bits, bool grouped, bool help, model_buf_t *b) {
  unsigned heading = 0;
  for (size_t i = 0; i < cli_opts_count; i++) {
    const cli_opt_t *p = &cli_opts[i];
    unsigned mine = p->commands & bits;
    if (!mine) continue;
    if (grouped && mine != heading) {
      if (help && heading == bits) {
        help_row(b);
        help = false;
      }
      model_buf_puts(b, heading ? "\nOptions of " : "Options of ");
      commands_of(mine, b);
      model_buf_puts(b, ":\n");
      heading = mine;
    }
    opt_label(p, b);
    model_buf_puts(b, p->doc);
    model_buf_putc(b, '\n');
  }
  if (help && grouped && heading != bits) {
    model_buf_puts(b, heading ? "\nOptions of " : "Options of ");
    commands_of(bits, b);
    model_buf_puts(b, ":\n");
  }
  if (help) help_row(b);
}

static void help_program(model_buf_t *b) {
  model_buf_puts(b, help_intro);
  model_buf_puts(b, "\nusage: aggregator COMMAND [OPTIONS]\n"
                    "       aggregator help [COMMAND] | --help | --version | -V\n\nCommands:\n");
  for (size_t i = 0; i < cli_cmds_count; i++) {
    const cli_cmd_t *c = &cli_cmds[i];
    if (!strcmp(c->name, "config")) continue; /* its actions are listed */
    char label[64];
    snprintf(label, sizeof label, "%s%s%s", c->name, *c->args ? " " : "", c->args);
    model_buf_printf(b, "  %-*s%s\n", HELP_OPT_WIDTH - 2, label, c->summary);
  }
  model_buf_putc(b, '\n');
  unsigned all = 0;
  for (size_t i = 0; i < cli_cmds_count; i++) all |= cli_cmds[i].bit;
  options_of(all, true, false, b);
  model_buf_puts(b, "\nEvery command takes -h or --help: its own help.\n"
                    "`aggregator --version` (or -V) prints the version, the commit it was built from and the versions of\n"
                    "librdkafka, libmongoc and libbson it runs with.\n");
  model_buf_puts(b, "\n");
  model_buf_puts(b, help_notes);
  model_buf_puts(b, "\n`aggregator help COMMAND` (or `COMMAND --help`) explains one command and its options.\n");
}

static void help_command(const cli_cmd_t *c, model_buf_t *b) {
  model_buf_printf(b, "aggregator %s: %s\n\n", c->name, c->summary);
  synopsis(c, b);
  model_buf_printf(b, "\n%s", c->doc);
  if (!strcmp(c->name, "config")) {
    model_buf_puts(b, "\nActions (`aggregator help config ACTION` explains one):\n");
    for (size_t i = 0; i < cli_cmds_count; i++) {
      const cli_cmd_t *a = &cli_cmds[i];
      if (!(a->bit & CLI_CONFIG_ACTIONS)) continue;
      model_buf_printf(b, "  %-*s%s\n", HELP_OPT_WIDTH - 2, a->name + strlen("config "), a->summary);
    }
    model_buf_putc(b, '\n');
    options_of(CLI_CONFIG_ACTIONS, true, true, b);
  } else {
    model_buf_puts(b, "\nOptions:\n");
    options_of(c->bit, false, true, b);
  }
}

void cli_help(const cli_cmd_t *cmd, FILE *out) {
  model_buf_t b = MODEL_BUF_INIT;
  if (cmd)
    help_command(cmd, &b);
  else
    help_program(&b);
  fwrite(b.data, 1, b.len, out);
  model_buf_destroy(&b);
}

void cli_help_hint(const cli_cmd_t *cmd, char *out, size_t out_size) {
  snprintf(out, out_size, "see 'aggregator help%s%s'", cmd ? " " : "", cmd ? cmd->name : "");
}

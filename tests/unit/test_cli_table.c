/* The command table: its rows are consistent (the help is written from
 * them), and the parser fills cli_options_t from any order of options,
 * refusing what a command does not take. The built binary's help and usage
 * errors are tests/cli/test_cli_help.sh. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_help.h"
#include "cli/cli_table.h"

/* Parses the NULL-terminated words after "aggregator". */
static cli_parse_result_t parse(const char *const *words, cli_options_t *o, char **sets, const cli_cmd_t **cmd,
                                cli_usage_error_t *err) {
  char *argv[32] = {"aggregator"};
  int argc = 1;
  for (; words[argc - 1]; argc++) argv[argc] = (char *)words[argc - 1];
  memset(o, 0, sizeof *o);
  o->sets = sets;
  return cli_parse(argc, argv, o, cmd, err);
}

START_TEST(rows_are_consistent) {
  unsigned all = 0;
  for (size_t i = 0; i < cli_cmds_count; i++) {
    const cli_cmd_t *c = &cli_cmds[i];
    ck_assert_msg(cli_cmd_find(c->name) == c, "%s: listed twice", c->name);
    ck_assert_msg(*c->summary && !strchr(c->summary, '\n'), "%s: the summary is one line", c->name);
    ck_assert_msg(*c->doc && c->doc[strlen(c->doc) - 1] == '\n', "%s: doc lines end with a newline", c->name);
    ck_assert_msg((c->main != NULL) == (c->bit != 0), "%s: a command that runs takes options", c->name);
    ck_assert_msg(!(all & c->bit), "%s: bit shared", c->name);
    all |= c->bit;
  }
  for (size_t i = 0; i < cli_opts_count; i++) {
    const cli_opt_t *p = &cli_opts[i];
    ck_assert_msg(!strncmp(p->name, "--", 2), "%s: a long name", p->name);
    ck_assert_msg(p->commands && !(p->commands & ~all), "%s: taken by known commands only", p->name);
    ck_assert_msg(*p->doc && !strchr(p->doc, '\n'), "%s: explained in one line", p->name);
    ck_assert_msg((p->arg == NULL) == (p->kind == CLI_OPT_FLAG), "%s: a flag has no argument", p->name);
    ck_assert_msg(p->kind == CLI_OPT_LIST || p->offset < sizeof(cli_options_t), "%s: field", p->name);
    for (size_t j = 0; j < i; j++) {
      ck_assert_str_ne(cli_opts[j].name, p->name);
      if (p->alias && cli_opts[j].alias) ck_assert_str_ne(cli_opts[j].alias, p->alias);
    }
  }
}
END_TEST

START_TEST(parse_fills_options) {
  cli_options_t o;
  char *sets[32];
  const cli_cmd_t *cmd;
  cli_usage_error_t err;
  const char *replay[] = {"replay", "--set", "a.b=1", "-c", "f.ini", "--input", "-", "--output", "out.jsonl",
                          "--rejects", "r.jsonl", "--set", "c.d=2", NULL};
  ck_assert_int_eq(parse(replay, &o, sets, &cmd, &err), CLI_PARSE_RUN);
  ck_assert_str_eq(cmd->name, "replay");
  ck_assert_ptr_eq(cmd->main, cli_replay);
  ck_assert_str_eq(o.config_path, "f.ini");
  ck_assert_str_eq(o.input, "-");
  ck_assert_str_eq(o.output, "out.jsonl");
  ck_assert_str_eq(o.rejects, "r.jsonl");
  ck_assert_ptr_null(o.from);
  ck_assert_uint_eq(o.nsets, 2);
  ck_assert_str_eq(o.sets[0], "a.b=1");
  ck_assert_str_eq(o.sets[1], "c.d=2");

  const char *verify[] = {"verify", "--repair", "--from", "2026-01-01T00:00:00Z", "--until", "end", NULL};
  ck_assert_int_eq(parse(verify, &o, sets, &cmd, &err), CLI_PARSE_RUN);
  ck_assert_ptr_eq(cmd->main, cli_verify);
  ck_assert(o.repair);
  ck_assert_str_eq(o.from, "2026-01-01T00:00:00Z");
  ck_assert_str_eq(o.until, "end");

  /* --name=VALUE, the value taken whole (it may hold '='). */
  const char *inline_values[] = {"replay", "--from=beginning", "--set=batch.linger_ms=5", "--input=a=b.jsonl",
                                 "--output=-", NULL};
  ck_assert_int_eq(parse(inline_values, &o, sets, &cmd, &err), CLI_PARSE_RUN);
  ck_assert_str_eq(o.from, "beginning");
  ck_assert_uint_eq(o.nsets, 1);
  ck_assert_str_eq(o.sets[0], "batch.linger_ms=5");
  ck_assert_str_eq(o.input, "a=b.jsonl");
  ck_assert_str_eq(o.output, "-");

  const char *show[] = {"config", "show", "--origin", "--config", "x.ini", NULL};
  ck_assert_int_eq(parse(show, &o, sets, &cmd, &err), CLI_PARSE_RUN);
  ck_assert_str_eq(cmd->name, "config show");
  ck_assert_str_eq(o.action, "show");
  ck_assert(o.origin);
  ck_assert_str_eq(o.config_path, "x.ini");
}
END_TEST

/* Every command asks for its own help with --help or -h, and with
 * `help COMMAND`; the help names every option the command takes. */
START_TEST(help_of_every_command) {
  cli_options_t o;
  char *sets[32];
  const cli_cmd_t *cmd;
  cli_usage_error_t err;
  for (size_t i = 0; i < cli_cmds_count; i++) {
    const cli_cmd_t *c = &cli_cmds[i];
    char name[64];
    snprintf(name, sizeof name, "%s", c->name);
    char *second = strchr(name, ' ');
    if (second) *second++ = '\0';
    const char *flag[] = {name, second ? second : "--help", second ? "-h" : NULL, NULL};
    ck_assert_int_eq(parse(flag, &o, sets, &cmd, &err), CLI_PARSE_HELP);
    ck_assert_ptr_eq(cmd, c);
    const char *help[] = {"help", name, second, NULL};
    ck_assert_int_eq(parse(help, &o, sets, &cmd, &err), CLI_PARSE_HELP);
    ck_assert_ptr_eq(cmd, c);

    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cli_help(c, f);
    fclose(f);
    unsigned bits = c->bit ? c->bit : !strcmp(c->name, "config") ? CLI_CONFIG_ACTIONS : 0;
    for (size_t j = 0; j < cli_opts_count; j++) {
      const cli_opt_t *p = &cli_opts[j];
      char line[128];
      snprintf(line, sizeof line, "\n  %s%s%s", p->alias ? p->alias : "", p->alias ? ", " : "", p->name);
      ck_assert_msg((strstr(text, line) != NULL) == ((p->commands & bits) != 0), "help %s and %s", c->name, p->name);
    }
    free(text);
  }
}
END_TEST

START_TEST(version_flags) {
  cli_options_t o;
  char *sets[32];
  const cli_cmd_t *cmd;
  cli_usage_error_t err;
  const char *long_form[] = {"--version", NULL}, *short_form[] = {"-V", NULL};
  ck_assert_int_eq(parse(long_form, &o, sets, &cmd, &err), CLI_PARSE_VERSION);
  ck_assert_int_eq(parse(short_form, &o, sets, &cmd, &err), CLI_PARSE_VERSION);
}
END_TEST

START_TEST(usage_errors) {
  static const struct {
    const char *words[8];
    const char *message, *hint;
  } cases[] = {
      {{NULL}, "missing command", "see 'aggregator help'"},
      {{"frob", NULL}, "unknown command 'frob'", "see 'aggregator help'"},
      {{"run", "-c", "a", "--config", "b", NULL}, "-c/--config given twice: it takes one FILE",
       "see 'aggregator help run'"},
      {{"replay", "--output", "a", "--output", "b", NULL}, "--output given twice: it takes one FILE|-",
       "see 'aggregator help replay'"},
      {{"run", "--repair", NULL}, "run does not take --repair", "see 'aggregator help run'"},
      {{"config", "check", "--origin", NULL}, "config check does not take --origin",
       "see 'aggregator help config check'"},
      {{"config", NULL}, "config needs an action: check|show|describe", "see 'aggregator help config'"},
      {{"verify", "--from", NULL}, "--from needs a value (beginning|TIME)", "see 'aggregator help verify'"},
      {{"verify", "--repair=yes", NULL}, "--repair takes no value", "see 'aggregator help verify'"},
      {{"run", "--config=a", "-c", "b", NULL}, "-c/--config given twice: it takes one FILE",
       "see 'aggregator help run'"},
      {{"run", "--bogus=1", NULL}, "unknown option '--bogus'", "see 'aggregator help run'"},
      {{"-V", "run", NULL}, "-V takes no argument, not 'run'", "see 'aggregator help'"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    cli_options_t o;
    char *sets[32];
    const cli_cmd_t *cmd;
    cli_usage_error_t err;
    ck_assert_int_eq(parse(cases[i].words, &o, sets, &cmd, &err), CLI_PARSE_USAGE);
    ck_assert_str_eq(err.message, cases[i].message);
    char hint[128];
    cli_help_hint(cmd, hint, sizeof hint);
    ck_assert_str_eq(hint, cases[i].hint);
  }
}
END_TEST

Suite *test_suite(void) {
  Suite *s = suite_create("cli_table");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, rows_are_consistent);
  tcase_add_test(tc, parse_fills_options);
  tcase_add_test(tc, help_of_every_command);
  tcase_add_test(tc, version_flags);
  tcase_add_test(tc, usage_errors);
  suite_add_tcase(s, tc);
  return s;
}

/* "Did you mean": for a section, a key or an AGGREGATOR_ variable that
 * names nothing, the known name closest to it (by edit distance, within a
 * third of its length), which config_load puts into its error or warning.
 * The names are the property table's (config_table.h); a misspelt
 * rdkafka.<property> is pointed at kafka.rdkafka.<property>. */
#ifndef CONFIG_SUGGEST_H
#define CONFIG_SUGGEST_H

#include <stdbool.h>
#include <stddef.h>

/* The known section closest to section, or NULL when none is close. */
const char *config_suggest_section(const char *section);
/* The known "section.key" closest to what was written (key without _file),
 * into out; false when nothing is close. */
bool config_suggest_key(const char *section, const char *key, char *out, size_t out_size);
/* The variable of a key closest to name (its n bytes, upper-cased, _FILE
 * kept), into out; false when none is close. */
bool config_suggest_env(const char *name, size_t n, char *out, size_t out_size);
/* How a suggested "section.key" is spelt where the mistake was made: as
 * the key (with _file when given through a file) in the file and --set, as
 * its variable AGGREGATOR_SECTION_KEY[_FILE] in the environment (env). */
void config_suggest_spell(bool env, const char *name, bool from_file, char *out, size_t out_size);

#endif

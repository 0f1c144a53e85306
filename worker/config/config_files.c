#include "config_files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* librdkafka's properties that name a file (librdkafka 2.0.2's
 * CONFIGURATION.md). */
static const struct {
  const char *name;
  bool dir_ok; /* a directory is a valid value */
} rdkafka_file_props[] = {
    {"ssl.ca.location", true},        {"ssl.certificate.location", false}, {"ssl.key.location", false},
    {"ssl.keystore.location", false}, {"ssl.crl.location", false},         {"ssl.engine.location", false},
    {"sasl.kerberos.keytab", false},
};

/* The libmongoc URI options that name a file. */
static const char *const uri_file_options[] = {
    "tlsCAFile", "tlsCertificateKeyFile", "tlsCRLFile", "sslCertificateAuthorityFile", "sslClientCertificateKeyFile",
};

bool config_rdkafka_names_file(const char *name, const char *value, bool *dir_ok) {
  for (size_t k = 0; k < sizeof rdkafka_file_props / sizeof rdkafka_file_props[0]; k++) {
    if (strcmp(name, rdkafka_file_props[k].name)) continue;
    *dir_ok = rdkafka_file_props[k].dir_ok;
    /* "probe": librdkafka looks in the system's usual places. */
    return strcmp(name, "ssl.ca.location") || strcmp(value, "probe");
  }
  return false;
}

const char *config_uri_option_names_file(const char *key) {
  for (size_t k = 0; k < sizeof uri_file_options / sizeof uri_file_options[0]; k++)
    if (!strcasecmp(key, uri_file_options[k])) return uri_file_options[k];
  return NULL;
}

/* Opened non-blocking, and anything but a regular file (or a directory
 * where one is valid) refused: a FIFO without a writer would hang the load,
 * or the TLS library that reads it. */
bool config_file_readable(const char *path, bool dir_ok, char *why, size_t why_size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    snprintf(why, why_size, "%s", strerror(errno));
    return false;
  }
  struct stat st = {0};
  bool ok = fstat(fd, &st) == 0 && (S_ISREG(st.st_mode) || (dir_ok && S_ISDIR(st.st_mode)));
  if (!ok) snprintf(why, why_size, "%s", S_ISDIR(st.st_mode) ? "is a directory" : "is not a regular file");
  close(fd);
  return ok;
}

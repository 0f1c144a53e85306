/* Shared value parsers. See value.h. */
#include "value.h"

#include <ctype.h>
#include <string.h>

bool value_parse_write_concern(const char *s, int32_t *w) {
  if (!s) return false;
  if (!strcmp(s, "majority")) {
    *w = VALUE_W_MAJORITY;
    return true;
  }
  size_t n = strlen(s);
  if (n == 0 || strspn(s, "0123456789") != n) return false;
  int32_t v = 0;
  for (size_t i = 0; i < n; i++) {
    v = v * 10 + (s[i] - '0');
    if (v > 50) return false;
  }
  if (v < 1) return false;
  *w = v;
  return true;
}

bool value_parse_listen(const char *s, value_listen_t *out) {
  if (!s) return false;
  const char *colon = strrchr(s, ':');
  if (!colon || colon == s) return false;
  const char *host = s, *host_end = colon;
  bool ipv6 = s[0] == '[';
  if (ipv6) {
    if (colon[-1] != ']' || colon - s < 3) return false;
    host++;
    host_end--;
    for (const char *p = host; p < host_end; p++)
      if (!isxdigit((unsigned char)*p) && *p != ':' && *p != '.') return false;
  } else {
    for (const char *p = host; p < host_end; p++)
      if (!isalnum((unsigned char)*p) && *p != '.' && *p != '-') return false;
  }
  size_t hlen = (size_t)(host_end - host);
  if (hlen >= sizeof out->host) return false;

  const char *port = colon + 1;
  size_t plen = strlen(port);
  if (plen == 0 || plen >= sizeof out->port || strspn(port, "0123456789") != plen) return false;
  long number = 0;
  for (size_t i = 0; i < plen; i++) number = number * 10 + (port[i] - '0');
  if (number > 65535) return false;

  memcpy(out->host, host, hlen);
  out->host[hlen] = '\0';
  out->ipv6 = ipv6;
  memcpy(out->port, port, plen + 1);
  out->port_number = (uint16_t)number;
  return true;
}

/* What the reference generators (gen_config_doc, gen_metrics_doc) share:
 * escaping a Markdown table cell and the command line that writes the page
 * to a file or standard output. */
#ifndef GEN_DOC_H
#define GEN_DOC_H

#include <stdio.h>

#include "buf.h"

/* Appends s as the text of a Markdown table cell: a '|' would end it. */
static inline void gen_doc_cell(model_buf_t *b, const char *s) {
  for (; *s; s++) {
    if (*s == '|') model_buf_putc(b, '\\');
    model_buf_putc(b, *s);
  }
}

/* `NAME [OUTPUT]`: writes the page with write() to OUTPUT or standard
 * output. Returns the exit status: 2 on usage, 1 when the page could not be
 * written whole. */
static inline int gen_doc_main(int argc, char **argv, const char *name, void (*write)(FILE *out)) {
  if (argc > 2) {
    fprintf(stderr, "usage: %s [OUTPUT]\n", name);
    return 2;
  }
  FILE *out = argc == 2 ? fopen(argv[1], "w") : stdout;
  if (!out) {
    perror(argv[1]);
    return 1;
  }
  write(out);
  if (fflush(out) || ferror(out) || (out != stdout && fclose(out))) {
    perror(name);
    return 1;
  }
  return 0;
}

#endif

/* Deterministic generator of realistic command streams, shared by
 * gen_commands (writes JSON lines) and bench_models (keeps them in memory).
 * Header-only because every .c file in tests/tools is its own executable.
 *
 * Model: `tenants` tenants share `assignments` assignments round-robin; each
 * assignment has `students` students (ids unique within the tenant, classes
 * overlap). Each assignment first gets its base commands, which fill every
 * slot: one assignment.upserted, then per student roster.assigned,
 * submission.updated and grade.updated; the rest of its share of `count`
 * are further updates drawn by the type weights (`mix`). Events get a time
 * (`ts`, September 2026 and on, each assignment starting at a random time
 * in the first `start_spread_days`: roster within minutes of the upsert,
 * submissions within two weeks, grades after them); versions are assigned
 * per entity in time order (a counter 1, 2, 3...; or the event's time in
 * ms with version_style = CMDGEN_VERSION_TIME), so they are monotonic at
 * the source as the spec says. Command ids are unique, 8..12 bytes.
 *
 * With key skew (hot_fraction, hot_share) the hot assignments split
 * hot_share of `count` and the others the rest; an assignment's share still
 * starts with its base commands, so cold ones may be filled only partly.
 *
 * Then duplicates (a copy of a random command, redelivered up to a day
 * later: same id, same bytes) and invalid lines (a mutated copy of a random
 * command, one of 12 rejection paths) are added, each as a fraction of the
 * valid commands, and the stream is put in time order or shuffled.
 *
 * The style (CMDGEN_STYLE_*) says how the lines are written: the same
 * commands in the schema's key order without spaces (ours), in the key
 * orders and spacing of other producers, or with UUID command ids.
 *
 * Same options and seed, same bytes, on any machine. */
#ifndef CMDGEN_H
#define CMDGEN_H

#include <stdbool.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "command.h"
#include "timestamp.h"

enum { CMDGEN_ORDER_TIME, CMDGEN_ORDER_SHUFFLE };
enum { CMDGEN_VERSION_COUNTER, CMDGEN_VERSION_TIME };

typedef struct cmdgen_opts {
  uint64_t seed;
  uint32_t tenants, assignments, students;
  uint64_t count;                        /* valid commands; 0 = exactly the base commands */
  double mix[MODEL_CMD_TYPE_COUNT];      /* weights of the extra updates, by model_cmd_type_t */
  double invalid_rate, duplicate_rate;   /* extra lines, as fractions of count */
  int order, version_style;
  /* Key skew: hot_fraction of the assignments (evenly spread over the ids)
   * get hot_share of the commands; 0 = every assignment gets the same share. */
  double hot_fraction, hot_share;
  /* Assignments start at random times over this many days (default 30),
   * so how many are active rises and falls over the stream; 0 starts them
   * all at once: every assignment is active throughout (a steady load). */
  uint32_t start_spread_days;
  int style; /* how the lines are written: CMDGEN_STYLE_* (cmdgen_render) */
} cmdgen_opts_t;

static inline void cmdgen_defaults(cmdgen_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->seed = 1;
  o->tenants = 10;
  o->assignments = 100;
  o->students = 30;
  /* extra updates: mostly submissions progressing and regrades */
  o->mix[MODEL_CMD_ASSIGNMENT_UPSERTED] = 10;
  o->mix[MODEL_CMD_ASSIGNMENT_DELETED] = 1;
  o->mix[MODEL_CMD_SUBMISSION_UPDATED] = 45;
  o->mix[MODEL_CMD_GRADE_UPDATED] = 30;
  o->mix[MODEL_CMD_ROSTER_ASSIGNED] = 4;
  o->mix[MODEL_CMD_ROSTER_UNASSIGNED] = 10;
  o->order = CMDGEN_ORDER_TIME;
  o->version_style = CMDGEN_VERSION_COUNTER;
  o->start_spread_days = 30;
}

/* "upserted=10,deleted=1,submission=45,grade=30,assigned=4,unassigned=10";
 * names not given get weight 0. */
static inline bool cmdgen_parse_mix(cmdgen_opts_t *o, const char *s) {
  static const char *const names[MODEL_CMD_TYPE_COUNT] = {"upserted", "deleted", "submission",
                                                          "grade",    "assigned", "unassigned"};
  double mix[MODEL_CMD_TYPE_COUNT] = {0};
  while (*s) {
    size_t n = strcspn(s, "=");
    int t = -1;
    for (int i = 0; i < MODEL_CMD_TYPE_COUNT; i++)
      if (strlen(names[i]) == n && !strncmp(s, names[i], n)) t = i;
    if (t < 0 || s[n] != '=') return false;
    char *end;
    mix[t] = strtod(s + n + 1, &end);
    if (end == s + n + 1 || mix[t] < 0 || (*end && *end != ',')) return false;
    s = *end ? end + 1 : end;
  }
  memcpy(o->mix, mix, sizeof mix);
  return true;
}

/* One command (or invalid line) of the stream; values are derived from
 * `rnd` when rendered, so that a duplicate renders to the same bytes. */
typedef struct cmdgen_event {
  int64_t ts; /* the command's `ts` (its content) */
  int64_t at; /* when it is delivered (its place in the stream) */
  uint64_t version;
  uint32_t assignment, seq, rnd;
  uint16_t student;
  uint8_t type;
  uint8_t invalid; /* 0 = valid, else the mutation (1..12) */
} cmdgen_event_t;

typedef struct cmdgen {
  cmdgen_opts_t o;
  cmdgen_event_t *ev;
  size_t n;
  size_t valid, duplicates, invalid; /* counts of each kind of line */
} cmdgen_t;

static inline uint64_t cmdgen_splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
static inline uint64_t cmdgen_below(uint64_t *s, uint64_t n) { return cmdgen_splitmix(s) % n; }

#define CMDGEN_T0 1788220800000LL /* 2026-09-01T00:00:00Z */
#define CMDGEN_MIN 60000LL
#define CMDGEN_HOUR 3600000LL
#define CMDGEN_DAY 86400000LL

static inline int cmdgen_cmp_at(const void *x, const void *y) {
  const cmdgen_event_t *a = x, *b = y;
  if (a->at != b->at) return a->at < b->at ? -1 : 1;
  if (a->seq != b->seq) return a->seq < b->seq ? -1 : 1; /* deterministic ties */
  return (int)a->invalid - (int)b->invalid;
}

static inline size_t cmdgen_slot(const cmdgen_opts_t *o, const cmdgen_event_t *e) {
  size_t base = (size_t)e->assignment * (1 + 3 * (size_t)o->students);
  switch (e->type) {
  case MODEL_CMD_ASSIGNMENT_UPSERTED:
  case MODEL_CMD_ASSIGNMENT_DELETED: return base;
  case MODEL_CMD_ROSTER_ASSIGNED:
  case MODEL_CMD_ROSTER_UNASSIGNED: return base + 1 + 3 * (size_t)e->student;
  case MODEL_CMD_SUBMISSION_UPDATED: return base + 2 + 3 * (size_t)e->student;
  default: return base + 3 + 3 * (size_t)e->student;
  }
}

/* Builds the stream; false on allocation failure or bad options. */
static inline bool cmdgen_build(cmdgen_t *g, const cmdgen_opts_t *o) {
  memset(g, 0, sizeof *g);
  g->o = *o;
  if (!o->tenants || !o->assignments || !o->students || o->students > 65535) return false;
  uint64_t per_base = 1 + 3 * (uint64_t)o->students;
  uint64_t count = o->count ? o->count : per_base * o->assignments;
  size_t n_dup = (size_t)((double)count * o->duplicate_rate), n_inv = (size_t)((double)count * o->invalid_rate);
  size_t cap = (size_t)count + n_dup + n_inv;
  g->ev = calloc(cap ? cap : 1, sizeof *g->ev);
  if (!g->ev) return false;
  double wsum = 0;
  for (int t = 0; t < MODEL_CMD_TYPE_COUNT; t++) wsum += o->mix[t];
  uint64_t rs = o->seed;
  cmdgen_event_t *ev = g->ev;
  size_t n = 0;
  uint32_t n_hot = 0;
  uint64_t hot_total = 0;
  if (o->hot_fraction > 0 && o->hot_share > 0) {
    n_hot = (uint32_t)(o->hot_fraction * o->assignments + 0.5);
    if (n_hot < 1) n_hot = 1;
    if (n_hot >= o->assignments) n_hot = 0; /* everyone hot: no skew */
    hot_total = n_hot ? (uint64_t)(o->hot_share * (double)count + 0.5) : 0;
  }
  uint32_t n_cold = o->assignments - n_hot, hot_seen = 0, cold_seen = 0;
  for (uint32_t a = 0; a < o->assignments; a++) {
    uint64_t budget;
    if (!n_hot) {
      budget = count / o->assignments + (a < count % o->assignments);
    } else if ((uint64_t)(a + 1) * n_hot / o->assignments != (uint64_t)a * n_hot / o->assignments) {
      budget = hot_total / n_hot + (hot_seen++ < hot_total % n_hot); /* hot, evenly spaced */
    } else {
      uint64_t cold_total = count - hot_total;
      budget = cold_total / n_cold + (cold_seen++ < cold_total % n_cold);
    }
    int64_t start =
        CMDGEN_T0 + (o->start_spread_days ? (int64_t)cmdgen_below(&rs, o->start_spread_days * (uint64_t)CMDGEN_DAY) : 0);
    for (uint64_t k = 0; k < budget; k++) {
      cmdgen_event_t *e = &ev[n++];
      e->assignment = a;
      e->rnd = (uint32_t)cmdgen_splitmix(&rs);
      if (k < per_base) { /* base: header, then each student's roster, submission, grade */
        if (k == 0) {
          e->type = MODEL_CMD_ASSIGNMENT_UPSERTED;
          e->ts = start;
        } else {
          uint64_t s = (k - 1) % o->students, kind = (k - 1) / o->students;
          e->student = (uint16_t)s;
          int64_t submitted = start + CMDGEN_HOUR + (int64_t)((e->rnd >> 8) % (14 * CMDGEN_DAY));
          if (kind == 0) {
            e->type = MODEL_CMD_ROSTER_ASSIGNED;
            e->ts = start + 1000 + (int64_t)cmdgen_below(&rs, 10 * CMDGEN_MIN);
          } else if (kind == 1) {
            e->type = MODEL_CMD_SUBMISSION_UPDATED;
            e->ts = submitted;
          } else {
            e->type = MODEL_CMD_GRADE_UPDATED;
            e->ts = start + 15 * CMDGEN_DAY + (int64_t)cmdgen_below(&rs, 5 * CMDGEN_DAY);
          }
        }
      } else { /* extra updates, by weight */
        double r = wsum > 0 ? (double)cmdgen_splitmix(&rs) / 18446744073709551616.0 * wsum : 0;
        int t = MODEL_CMD_SUBMISSION_UPDATED;
        for (int i = 0; i < MODEL_CMD_TYPE_COUNT; i++) {
          if (o->mix[i] <= 0) continue;
          t = i;
          if (r < o->mix[i]) break;
          r -= o->mix[i];
        }
        e->type = (uint8_t)t;
        e->student = (uint16_t)cmdgen_below(&rs, o->students);
        e->ts = start + CMDGEN_HOUR + (int64_t)cmdgen_below(&rs, 30 * CMDGEN_DAY);
      }
    }
  }
  /* ids and versions in time order, per entity */
  for (size_t i = 0; i < n; i++) {
    ev[i].seq = (uint32_t)i; /* tie-break for the sort */
    ev[i].at = ev[i].ts;
  }
  qsort(ev, n, sizeof *ev, cmdgen_cmp_at);
  size_t nslots = (size_t)o->assignments * per_base;
  uint64_t *last = calloc(nslots, sizeof *last);
  if (!last) return false;
  for (size_t i = 0; i < n; i++) {
    ev[i].seq = (uint32_t)i;
    uint64_t *v = &last[cmdgen_slot(o, &ev[i])];
    if (o->version_style == CMDGEN_VERSION_TIME) {
      *v = (uint64_t)ev[i].ts > *v ? (uint64_t)ev[i].ts : *v; /* same ms: a tie, broken by the id */
    } else {
      ++*v;
    }
    ev[i].version = *v;
  }
  free(last);
  g->valid = n;
  /* redeliveries and invalid lines */
  for (size_t i = 0; i < n_dup; i++) {
    cmdgen_event_t *e = &ev[n++];
    *e = ev[cmdgen_below(&rs, g->valid)];
    e->at += (int64_t)cmdgen_below(&rs, CMDGEN_DAY);
  }
  for (size_t i = 0; i < n_inv; i++) {
    cmdgen_event_t *e = &ev[n++];
    *e = ev[cmdgen_below(&rs, g->valid)];
    e->invalid = (uint8_t)(1 + cmdgen_below(&rs, 12));
    e->at += (int64_t)cmdgen_below(&rs, CMDGEN_HOUR);
  }
  g->duplicates = n_dup;
  g->invalid = n_inv;
  g->n = n;
  if (o->order == CMDGEN_ORDER_SHUFFLE) {
    for (size_t i = n; i > 1; i--) {
      size_t j = (size_t)cmdgen_below(&rs, i);
      cmdgen_event_t t = ev[i - 1];
      ev[i - 1] = ev[j];
      ev[j] = t;
    }
  } else {
    qsort(ev, n, sizeof *ev, cmdgen_cmp_at);
  }
  return true;
}

static inline void cmdgen_destroy(cmdgen_t *g) {
  free(g->ev);
  g->ev = NULL;
}

static const char *const cmdgen_titles[] = {
    "Persuasive essay", "Chapter 5 quiz", "Lab report: titration", "Reading log week 3", "Poetry analysis",
    "Fractions worksheet", "Book review", "History timeline project", "Photosynthesis diagram",
    "Spanish vocabulary 4", "Geometry proofs", "Group presentation slides",
};
static const char *const cmdgen_feedback[] = {
    "Good work",        "See comments", "Great effort!",          "Cite your sources", "Well argued",
    "Late submission",  "",             "Check question 3",       "Excellent",         "Needs more detail",
    "Nice diagrams",    "Redo part b",
};

static inline uint32_t cmdgen_mix32(uint32_t x, uint32_t salt) {
  x ^= salt * 0x9e3779b9u;
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  return x ^ (x >> 16);
}

/* The ways the stream's lines can be written: the same commands, in
 * another key order, spacing, id form or string escaping, as producers
 * other than ours write them. */
enum {
  CMDGEN_STYLE_OURS,      /* schema order (id, type, tenant, assignment, student, version, ts, data), no spaces */
  CMDGEN_STYLE_REORDERED, /* id, tenant, assignment, version, ts, type, student, data; no spaces */
  CMDGEN_STYLE_PYTHON,    /* the reordered keys as Python's json.dumps writes them: ", " and ": " */
  CMDGEN_STYLE_UUID,      /* UUID command ids; keys sorted by name at both levels, no spaces */
  CMDGEN_STYLE_TABS,      /* the reordered keys indented with tabs on one line: a key after as many tabs
                           * as its depth, a tab before and after ':', the tabs of its depth less one
                           * before a '}' */
  CMDGEN_STYLE_CRLF,      /* python's lines as a Windows producer ends them: "\r\n" */
  /* Texts with the characters encoders escape (titles, feedback: cmdgen_texts), each written as: */
  CMDGEN_STYLE_PHP,       /* PHP's json_encode: the reordered keys, "\/", "\"", non-ASCII as \u00e9 (pairs past U+FFFF) */
  CMDGEN_STYLE_JACKSON,   /* Java's Jackson with ESCAPE_NON_ASCII: schema order, non-ASCII as \u00E9 */
  CMDGEN_STYLE_DOTNET,    /* .NET's System.Text.Json: the reordered keys, non-ASCII and " ' < > & + ` as \u00E9 */
  CMDGEN_STYLE_GO,        /* Go's encoding/json: schema order, < > & as \u003c \u003e \u0026, UTF-8 as it is */
  CMDGEN_STYLE_COUNT
};

static const char *const cmdgen_style_names[CMDGEN_STYLE_COUNT] = {"ours", "reordered", "python", "uuid", "tabs",
                                                                   "crlf", "php",  "jackson",   "dotnet", "go"};

/* Whether a style writes its texts from cmdgen_texts (escaped its way). */
static inline bool cmdgen_style_escapes(int style) { return style >= CMDGEN_STYLE_PHP; }

/* The titles and feedback of the escaping styles, in UTF-8: the same
 * commands as the others' texts, with slashes, quotes, a backslash, HTML's
 * characters, accents and characters past U+FFFF (a surrogate pair). */
static const char *const cmdgen_texts_titles[] = {
    "Dissertation : la R\xc3\xa9volution", "Chapter 5 quiz (A/B)", "Lab report: \"titration\"",
    "Reading log \xe2\x80\x93 week 3", "Poetry analysis \xe2\x80\x9cOzymandias\xe2\x80\x9d",
    "Fractions \xc2\xbd worksheet", "Book review: <Dune>", "History timeline 1914/1918",
    "Photosynthesis & respiration", "Espa\xc3\xb1ol vocabulario 4", "Geometry proofs: \xe2\x88\xa0" "ABC",
    "Group presentation \xf0\x9f\x8e\xa4",
};
static const char *const cmdgen_texts_feedback[] = {
    "Tr\xc3\xa8s bien !",   "See comments / rubric", "Great effort \xf0\x9f\x91\x8d",
    "Cite your sources (APA/MLA)", "Well argued: \"clear\" thesis", "Late submission \xe2\x80\x93 2 days",
    "",                       "Check question 3 & 4",  "Excellent <3",
    "L'\xc3\xa9l\xc3\xa8ve peut mieux faire", "Nice diagrams \\o/", "Redo part b: x + y",
};

/* Appends text (UTF-8) as a JSON string the way style's encoder writes it. */
static inline void cmdgen_put_text(model_buf_t *b, const char *text, int style) {
  bool upper = style == CMDGEN_STYLE_JACKSON || style == CMDGEN_STYLE_DOTNET;
  const char *hex = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  const unsigned char *p = (const unsigned char *)text;
  model_buf_putc(b, '"');
  while (*p) {
    unsigned c = *p, cp = c;
    size_t n = 1;
    if (c >= 0xF0) cp = (c & 7u) << 18 | (p[1] & 63u) << 12 | (p[2] & 63u) << 6 | (p[3] & 63u), n = 4;
    else if (c >= 0xE0) cp = (c & 15u) << 12 | (p[1] & 63u) << 6 | (p[2] & 63u), n = 3;
    else if (c >= 0xC0) cp = (c & 31u) << 6 | (p[1] & 63u), n = 2;
    bool esc;
    switch (style) {
    case CMDGEN_STYLE_PHP: esc = cp >= 0x80; break;
    case CMDGEN_STYLE_JACKSON: esc = cp >= 0x80; break;
    case CMDGEN_STYLE_DOTNET: esc = cp >= 0x80 || strchr("\"'<>&+`", (int)cp); break;
    case CMDGEN_STYLE_GO: esc = cp == '<' || cp == '>' || cp == '&'; break;
    default: esc = false;
    }
    if (esc) {
      unsigned units[2] = {cp, 0}, nu = 1;
      if (cp >= 0x10000) units[0] = 0xD800 + ((cp - 0x10000) >> 10), units[1] = 0xDC00 + (cp & 0x3FF), nu = 2;
      for (unsigned k = 0; k < nu; k++) {
        char u[7] = {'\\', 'u', hex[units[k] >> 12], hex[units[k] >> 8 & 15], hex[units[k] >> 4 & 15],
                     hex[units[k] & 15], 0};
        model_buf_puts(b, u);
      }
    } else if (c == '"' || c == '\\') {
      model_buf_putc(b, '\\');
      model_buf_putc(b, (char)c);
    } else if (c == '/' && style == CMDGEN_STYLE_PHP) {
      model_buf_puts(b, "\\/");
    } else {
      model_buf_append(b, (const char *)p, n);
    }
    p += n;
  }
  model_buf_putc(b, '"');
}

/* One member of a line being rendered: its key and its value, as JSON. */
typedef struct cmdgen_member {
  const char *key;
  char val[256];
  bool set;
} cmdgen_member_t;

enum { CMDGEN_K_ID, CMDGEN_K_TYPE, CMDGEN_K_TENANT, CMDGEN_K_ASSIGNMENT, CMDGEN_K_STUDENT, CMDGEN_K_VERSION,
       CMDGEN_K_TS, CMDGEN_K_DATA, CMDGEN_K_COUNT };
enum { CMDGEN_D_CLASS, CMDGEN_D_TITLE, CMDGEN_D_STATUS, CMDGEN_D_DUE_AT, CMDGEN_D_POINTS, CMDGEN_D_SUBMITTED_AT,
       CMDGEN_D_RETURNED_AT, CMDGEN_D_FEEDBACK, CMDGEN_D_COUNT };

/* The order each style writes the members in, by the indexes above. */
#define CMDGEN_ROOT_OURS {CMDGEN_K_ID, CMDGEN_K_TYPE, CMDGEN_K_TENANT, CMDGEN_K_ASSIGNMENT, CMDGEN_K_STUDENT, \
                          CMDGEN_K_VERSION, CMDGEN_K_TS, CMDGEN_K_DATA}
#define CMDGEN_ROOT_REORDERED {CMDGEN_K_ID, CMDGEN_K_TENANT, CMDGEN_K_ASSIGNMENT, CMDGEN_K_VERSION, CMDGEN_K_TS, \
                               CMDGEN_K_TYPE, CMDGEN_K_STUDENT, CMDGEN_K_DATA}
static const uint8_t cmdgen_root_order[CMDGEN_STYLE_COUNT][CMDGEN_K_COUNT] = {
    CMDGEN_ROOT_OURS,
    CMDGEN_ROOT_REORDERED,
    CMDGEN_ROOT_REORDERED,
    {CMDGEN_K_ASSIGNMENT, CMDGEN_K_DATA, CMDGEN_K_ID, CMDGEN_K_STUDENT, CMDGEN_K_TENANT, CMDGEN_K_TS, CMDGEN_K_TYPE,
     CMDGEN_K_VERSION},
    CMDGEN_ROOT_REORDERED, /* tabs */
    CMDGEN_ROOT_REORDERED, /* crlf */
    CMDGEN_ROOT_REORDERED, /* php */
    CMDGEN_ROOT_OURS,      /* jackson */
    CMDGEN_ROOT_REORDERED, /* dotnet */
    CMDGEN_ROOT_OURS,      /* go */
};
#undef CMDGEN_ROOT_OURS
#undef CMDGEN_ROOT_REORDERED
#define CMDGEN_DATA_OURS {0, 1, 2, 3, 4, 5, 6, 7}
static const uint8_t cmdgen_data_order[CMDGEN_STYLE_COUNT][CMDGEN_D_COUNT] = {
    CMDGEN_DATA_OURS,
    CMDGEN_DATA_OURS,
    CMDGEN_DATA_OURS,
    {CMDGEN_D_CLASS, CMDGEN_D_DUE_AT, CMDGEN_D_FEEDBACK, CMDGEN_D_POINTS, CMDGEN_D_RETURNED_AT, CMDGEN_D_STATUS,
     CMDGEN_D_SUBMITTED_AT, CMDGEN_D_TITLE},
    CMDGEN_DATA_OURS, CMDGEN_DATA_OURS, CMDGEN_DATA_OURS, CMDGEN_DATA_OURS, CMDGEN_DATA_OURS, CMDGEN_DATA_OURS,
};
#undef CMDGEN_DATA_OURS

static inline void cmdgen_set(cmdgen_member_t *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void cmdgen_set(cmdgen_member_t *m, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m->val, sizeof m->val, fmt, ap);
  va_end(ap);
  m->set = true;
}

static inline void cmdgen_set_ts(cmdgen_member_t *m, int64_t ms) {
  char ts[MODEL_TIMESTAMP_LEN + 1];
  model_timestamp_format(ms, ts);
  cmdgen_set(m, "\"%s\"", ts);
}

/* The whitespace of a style in an object at depth `depth` (1: the top
 * level): after a ',' (where ','), before a key ('k'), before a ':' ('c'),
 * after it (':'), before the '}' ('}'). */
static inline void cmdgen_put_ws(model_buf_t *b, int style, char where, unsigned depth) {
  bool spaced = style == CMDGEN_STYLE_PYTHON || style == CMDGEN_STYLE_CRLF;
  if (style == CMDGEN_STYLE_TABS) {
    unsigned n = where == ':' || where == 'c' ? 1 : where == '}' ? depth - 1 : where == ',' ? 0 : depth;
    for (unsigned k = 0; k < n; k++) model_buf_putc(b, '\t');
  } else if (spaced && (where == ',' || where == ':')) {
    model_buf_putc(b, ' ');
  }
}

/* Appends the members that are set, in `order`, as the members of one
 * object at depth `depth` (1: the top level) in `style`. */
static inline void cmdgen_put_members(model_buf_t *b, const cmdgen_member_t *m, const uint8_t *order, size_t n,
                                      int style, unsigned depth, const char *extra_after_id) {
  bool first = true;
  for (size_t k = 0; k < n; k++) {
    const cmdgen_member_t *x = &m[order[k]];
    if (!x->set) continue;
    if (!first) {
      model_buf_putc(b, ',');
      cmdgen_put_ws(b, style, ',', depth);
    }
    first = false;
    cmdgen_put_ws(b, style, 'k', depth);
    model_buf_printf(b, "\"%s\"", x->key);
    cmdgen_put_ws(b, style, 'c', depth);
    model_buf_putc(b, ':');
    cmdgen_put_ws(b, style, ':', depth);
    model_buf_puts(b, x->val);
    if (extra_after_id && order[k] == CMDGEN_K_ID) model_buf_puts(b, extra_after_id);
  }
  cmdgen_put_ws(b, style, '}', depth);
}

/* A member set to text as a JSON string of the style. */
static inline void cmdgen_set_text(cmdgen_member_t *m, const char *text, int style) {
  model_buf_t t = MODEL_BUF_INIT;
  cmdgen_put_text(&t, text, style);
  size_t n = t.len < sizeof m->val ? t.len : sizeof m->val - 1;
  memcpy(m->val, t.data, n);
  m->val[n] = '\0';
  m->set = true;
  model_buf_destroy(&t);
}

/* Appends event e as one line, '\n' included, in the stream's style. */
static inline void cmdgen_render(const cmdgen_t *g, const cmdgen_event_t *e, model_buf_t *b) {
  static const char alnum[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  const cmdgen_opts_t *o = &g->o;
  int style = o->style;
  bool spaced = style == CMDGEN_STYLE_PYTHON || style == CMDGEN_STYLE_CRLF;
  const char *eol = style == CMDGEN_STYLE_CRLF ? "\r\n" : "\n";
  uint32_t r = e->rnd;
  int bad = e->invalid;
  if (bad == 1) { /* an empty line: invalid_json */
    model_buf_puts(b, eol);
    return;
  }
  size_t start = b->len;
  uint32_t tenant = e->assignment % o->tenants;
  uint32_t class_no = e->assignment / o->tenants % 40; /* 40 classes per tenant share students */
  char id[40];
  if (style == CMDGEN_STYLE_UUID) { /* a version 4 UUID whose last group is the event's number */
    snprintf(id, sizeof id, "%08x-%04x-4%03x-%c%03x-%012x", cmdgen_mix32(r, 13), cmdgen_mix32(r, 14) & 0xffff,
             cmdgen_mix32(r, 15) & 0xfff, "89ab"[cmdgen_mix32(r, 16) & 3], cmdgen_mix32(r, 17) & 0xfff, e->seq);
  } else {
    int idn = snprintf(id, sizeof id, "e%07u", e->seq % 10000000u);
    for (uint32_t k = 0, extra = cmdgen_mix32(r, 1) % 5; k < extra; k++) id[idn++] = alnum[cmdgen_mix32(r, 2 + k) % 36];
    id[idn] = 0;
    if (e->seq >= 10000000u) id[0] = (char)('f' + e->seq / 10000000u % 20); /* keep ids unique past 10 M */
  }
  cmdgen_member_t m[CMDGEN_K_COUNT] = {{"id", "", false},      {"type", "", false},    {"tenant", "", false},
                                       {"assignment", "", false}, {"student", "", false}, {"version", "", false},
                                       {"ts", "", false},      {"data", "", false}};
  cmdgen_member_t d[CMDGEN_D_COUNT] = {{"class", "", false},       {"title", "", false},  {"status", "", false},
                                       {"dueAt", "", false},       {"points", "", false}, {"submittedAt", "", false},
                                       {"returnedAt", "", false}, {"feedback", "", false}};
  cmdgen_set(&m[CMDGEN_K_ID], "\"%s%s\"", bad == 3 ? "bad id " : "", id); /* 3: invalid_value */
  cmdgen_set(&m[CMDGEN_K_TYPE], "\"%s\"", bad == 5 ? "grade.removed" : model_cmd_type_name(e->type));
  cmdgen_set(&m[CMDGEN_K_TENANT], "\"%sdistrict-%02u\"", bad == 6 ? "bad " : "", tenant);
  cmdgen_set(&m[CMDGEN_K_ASSIGNMENT], "\"asg-%06u\"", e->assignment);
  if (model_cmd_type_has_student(e->type))
    cmdgen_set(&m[CMDGEN_K_STUDENT], "\"stu%05u\"", (class_no * 17 + e->student) % 100000);
  if (bad == 7) cmdgen_set(&m[CMDGEN_K_VERSION], "\"1\""); /* wrong_type */
  else if (bad == 8) cmdgen_set(&m[CMDGEN_K_VERSION], "0"); /* invalid_version */
  else if (bad != 9) cmdgen_set(&m[CMDGEN_K_VERSION], "%llu", (unsigned long long)e->version); /* 9: missing */
  if (bad == 10) cmdgen_set(&m[CMDGEN_K_TS], "\"2026-02-29T10:00:00Z\""); /* invalid_timestamp */
  else if (bad == 11) cmdgen_set(&m[CMDGEN_K_TS], "\"2026-09-01T10:00:00\xff\""); /* invalid_utf8 */
  else cmdgen_set_ts(&m[CMDGEN_K_TS], e->ts);
  switch (e->type) {
  case MODEL_CMD_ASSIGNMENT_UPSERTED: {
    static const char *const st[] = {"published", "published", "published", "draft", "closed"};
    cmdgen_set(&d[CMDGEN_D_CLASS], "\"cls-%03u\"", class_no);
    if (cmdgen_style_escapes(style))
      cmdgen_set_text(&d[CMDGEN_D_TITLE], cmdgen_texts_titles[cmdgen_mix32(e->assignment, 3) % 12], style);
    else
      cmdgen_set(&d[CMDGEN_D_TITLE], "\"%s\"", cmdgen_titles[cmdgen_mix32(e->assignment, 3) % 12]);
    cmdgen_set(&d[CMDGEN_D_STATUS], "\"%s\"", st[cmdgen_mix32(r, 4) % 5]);
    if (cmdgen_mix32(r, 5) % 4) cmdgen_set_ts(&d[CMDGEN_D_DUE_AT], CMDGEN_T0 + 14 * CMDGEN_DAY + (int64_t)(r % 1000) * CMDGEN_HOUR);
    else cmdgen_set(&d[CMDGEN_D_DUE_AT], "null");
    if (cmdgen_mix32(r, 6) % 5) cmdgen_set(&d[CMDGEN_D_POINTS], "%u", 10 * (1 + cmdgen_mix32(r, 7) % 10));
    break;
  }
  case MODEL_CMD_SUBMISSION_UPDATED: {
    uint32_t p = cmdgen_mix32(r, 8) % 100;
    const char *st = p < 55 ? "submitted" : p < 75 ? "returned" : p < 95 ? "working" : "reassigned";
    cmdgen_set(&d[CMDGEN_D_STATUS], "\"%s\"", st);
    if (p < 75) cmdgen_set_ts(&d[CMDGEN_D_SUBMITTED_AT], e->ts - (int64_t)(r % 3600000));
    if (p >= 55 && p < 75) cmdgen_set_ts(&d[CMDGEN_D_RETURNED_AT], e->ts);
    break;
  }
  case MODEL_CMD_GRADE_UPDATED: {
    uint32_t p = cmdgen_mix32(r, 9) % 100, q = cmdgen_mix32(r, 10);
    if (p < 5) cmdgen_set(&d[CMDGEN_D_POINTS], "null");
    else if (p < 30) cmdgen_set(&d[CMDGEN_D_POINTS], "%u.5", 50 + q % 50);
    else cmdgen_set(&d[CMDGEN_D_POINTS], "%u", 40 + q % 61);
    if (cmdgen_mix32(r, 11) % 5 < 3 && cmdgen_style_escapes(style))
      cmdgen_set_text(&d[CMDGEN_D_FEEDBACK], cmdgen_texts_feedback[cmdgen_mix32(r, 12) % 12], style);
    else if (cmdgen_mix32(r, 11) % 5 < 3)
      cmdgen_set(&d[CMDGEN_D_FEEDBACK], "\"%s\"", cmdgen_feedback[cmdgen_mix32(r, 12) % 12]);
    else cmdgen_set(&d[CMDGEN_D_FEEDBACK], "null");
    break;
  }
  default: break;
  }
  if (bad == 2) model_buf_puts(b, "["); /* not_object */
  model_buf_putc(b, '{');
  /* 4: duplicate_key, a second tenant right after the id */
  const char *dup = bad != 4 ? NULL : spaced ? ", \"tenant\": \"x\"" : style == CMDGEN_STYLE_TABS ? ",\t\"tenant\"\t:\t\"x\""
                                                                       : ",\"tenant\":\"x\"";
  if (e->type == MODEL_CMD_ASSIGNMENT_UPSERTED || e->type == MODEL_CMD_SUBMISSION_UPDATED ||
      e->type == MODEL_CMD_GRADE_UPDATED) {
    model_buf_t data = MODEL_BUF_INIT;
    model_buf_putc(&data, '{');
    cmdgen_put_members(&data, d, cmdgen_data_order[style], CMDGEN_D_COUNT, style, 2, NULL);
    model_buf_putc(&data, '}');
    m[CMDGEN_K_DATA].set = true;
    size_t n = data.len < sizeof m[CMDGEN_K_DATA].val ? data.len : sizeof m[CMDGEN_K_DATA].val - 1;
    memcpy(m[CMDGEN_K_DATA].val, data.data, n);
    m[CMDGEN_K_DATA].val[n] = '\0';
    model_buf_destroy(&data);
  }
  cmdgen_put_members(b, m, cmdgen_root_order[style], CMDGEN_K_COUNT, style, 1, dup);
  model_buf_putc(b, '}');
  if (bad == 2) model_buf_putc(b, ']');
  if (bad == 12) b->len = start + (b->len - start) / 2; /* truncated: invalid_json */
  model_buf_puts(b, eol);
}

#endif

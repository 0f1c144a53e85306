/* model_json: a strict, allocation-free JSON scanner with schema-directed
 * extraction (RFC 8259, plus the global rules of a command: UTF-8, no
 * duplicate keys, no U+0000). A text of the plain shape commands are written
 * in, whatever its key order and spacing, is scanned in one pass; any other
 * text in at most two (json_scan.c).
 *
 * Why not a DOM parser: decoding is the worker's hot path, a tree per
 * command is work thrown away, and none of the common libraries enforce every
 * rule a command needs (duplicate keys compared after unescaping, lone surrogates, the
 * order of error codes). The scanner validates the whole text and, instead of
 * building a tree, records where the values of a few known keys are: keys of
 * the top-level object, and keys of one object nested under a chosen
 * top-level key (a command's `data`). Everything else is validated and
 * skipped.
 *
 * What model_json_scan() checks, in the order it reports them (the first one
 * that applies wins):
 *   1. MODEL_JSON_ERR_UTF8: raw bytes that are not UTF-8, anywhere; or a
 *      \uXXXX escape that makes no code point (a lone surrogate) in a string
 *      met before the first syntax error.
 *   2. MODEL_JSON_ERR_SYNTAX: anything RFC 8259 does not allow, and nesting
 *      deeper than MODEL_JSON_MAX_DEPTH.
 *   3. MODEL_JSON_ERR_DUPLICATE: one object holding two keys that are equal
 *      once unescaped, at any depth (the first one in text order is named).
 *   4. MODEL_JSON_ERR_NUL: a string (key or value) containing U+0000.
 *
 * Ownership: the scanner keeps pointers into nothing; values are offsets into
 * the caller's buffer, which must outlive their use. It allocates nothing
 * unless more than MODEL_JSON_STACK_KEYS keys are open at once (members of
 * objects still being scanned), which no realistic command comes near; past
 * that it grows a heap array, freed before it returns, so that pathological
 * input stays linear (O(n log n)) instead of failing or going quadratic. */
#ifndef MODEL_JSON_SCAN_H
#define MODEL_JSON_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Containers nested deeper than this are a syntax error (the top-level value
 * is depth 1). */
#define MODEL_JSON_MAX_DEPTH 64
/* Keys of open objects kept on the C stack before the scanner uses the heap. */
#define MODEL_JSON_STACK_KEYS 256

typedef enum {
  MODEL_JSON_ABSENT = 0, /* key not present */
  MODEL_JSON_NULL,
  MODEL_JSON_FALSE,
  MODEL_JSON_TRUE,
  MODEL_JSON_NUMBER,
  MODEL_JSON_STRING,
  MODEL_JSON_OBJECT,
  MODEL_JSON_ARRAY
} model_json_type_t;

/* "null", "false", "true", "number", "string", "object", "array"; "absent". */
const char *model_json_type_name(model_json_type_t t);

/* Where one captured value is. For a string, [start, start+len) is the text
 * between the quotes (still escaped when `escaped`); for a number, the
 * literal; for an object or array, only start (its opening bracket) is set. */
typedef struct model_json_value {
  model_json_type_t type;
  bool escaped;    /* string contains backslash escapes */
  bool frac_exp;   /* number has a fraction or an exponent */
  bool negative;   /* number starts with '-' */
  /* string: true says that it is 1..16 bytes, each a letter, a digit, '-'
   * or '_' (so no escapes); false says nothing. Only a name the schema's
   * slots mark as an id gets it, and only from the plain path; it spares
   * the caller a check that the scan made while the bytes were at hand. */
  bool ident;
  size_t start;
  size_t len;
} model_json_value_t;

/* Longest name a schema can hold; names are stored zero-padded to it, so
 * that a key is compared with a name as two 64-bit words. */
#define MODEL_JSON_KEY_MAX 16
/* Most names in one list of a schema (one bit each per object). */
#define MODEL_JSON_NAMES_MAX 32

/* Which keys to capture. Names are matched against the unescaped key. Only
 * the first occurrence of a key is captured (a second one is a duplicate,
 * reported anyway). sub_index names the top-level key whose object value has
 * its keys matched against sub_keys (-1: none). Names are distinct within a
 * list, 0..MODEL_JSON_KEY_MAX bytes of printable ASCII other than '"' and '\'
 * (so that a name is written the same escaped or not), the rest of their
 * array zero. */
typedef struct model_json_schema {
  const char (*root_keys)[MODEL_JSON_KEY_MAX];
  const uint8_t *root_lens; /* length of each name */
  size_t n_root;            /* at most MODEL_JSON_NAMES_MAX */
  int sub_index;
  const char (*sub_keys)[MODEL_JSON_KEY_MAX];
  const uint8_t *sub_lens;
  size_t n_sub; /* at most MODEL_JSON_NAMES_MAX */
  /* Per list, model_json_slots() of its names: where the scan finds the
   * name a key may be. Optional (NULL: every text takes the full scan). */
  const struct model_json_slots *root_slots;
  const struct model_json_slots *sub_slots;
} model_json_schema_t;

/* Entries of a list's table of slots (model_json_slots). */
#define MODEL_JSON_SLOTS 64

/* How the scan goes from a key's first two bytes to the one name of a list
 * it may be, in any order of the keys: the slot of those bytes holds the
 * candidate's pattern (the name, '"' and ':'), compared with the text in
 * one compare. Filled by model_json_slots; read only by the scan. */
typedef struct model_json_slot {
  unsigned char pat[16]; /* name '"' ':', zero-padded */
  uint32_t mask;         /* bit k: byte k of pat is compared; bits 16, 17 (never met): no name, or several */
  uint8_t name;          /* index of the name */
  uint8_t skip;          /* bytes from a key's first byte to its value: the name's length + 2 */
  uint8_t ident;         /* its string values are checked for id bytes (model_json_value_t.ident) */
  uint8_t quote;         /* the name's length: where the key's closing quote is, from its first byte */
  uint16_t at;           /* name * sizeof(model_json_value_t): where its value goes in the list's values */
  /* quote + 1, the byte after the key's closing quote, when the 4 bytes
   * from there are among the key's 16 (a name of at most 11 bytes), where
   * the scan compares a separator with the text; else 0: the key's first
   * byte, never whitespace, which no separator (each starts with
   * whitespace) matches */
  uint8_t sep_at;
  uint32_t qmask; /* mask >> 1: the name and its quote, without the ':' */
} __attribute__((aligned(32))) model_json_slot_t;

typedef struct model_json_slots {
  model_json_slot_t slot[MODEL_JSON_SLOTS]; /* by slot: a copy of its one name's entry */
  model_json_slot_t name[MODEL_JSON_NAMES_MAX]; /* by name (skip 0: never matched in place) */
  uint8_t count[MODEL_JSON_SLOTS];              /* names in each slot */
  uint8_t n;                                    /* names in the list */
} model_json_slots_t;

/* Fills *slots for names[0..n) of lengths lens (n <= MODEL_JSON_NAMES_MAX);
 * bit i of ident: name i holds ids, whose values get model_json_value_t's
 * ident. A schema holds one for each of its lists; fill it once, before
 * the first scan with the schema. */
void model_json_slots(const char (*names)[MODEL_JSON_KEY_MAX], const uint8_t *lens, size_t n, uint32_t ident,
                      model_json_slots_t *slots);

typedef enum {
  MODEL_JSON_OK = 0,
  MODEL_JSON_ERR_UTF8,
  MODEL_JSON_ERR_SYNTAX,
  MODEL_JSON_ERR_DUPLICATE,
  MODEL_JSON_ERR_NUL
} model_json_status_t;

typedef struct model_json_result {
  model_json_status_t status;
  model_json_type_t top; /* type of the top-level value (when status is OK) */
  size_t offset;         /* byte offset of the error */
  char detail[160];      /* one printable-ASCII line when status is not OK */
} model_json_result_t;

/* Scans buf[0..len). root_vals[n_root] and sub_vals[n_sub] are written (all
 * of them: ABSENT for keys not found). Returns true when status is OK. */
bool model_json_scan(const char *buf, size_t len, const model_json_schema_t *schema,
                     model_json_value_t *root_vals, model_json_value_t *sub_vals,
                     model_json_result_t *res);

/* The string kernels of the scan (json_simd.h). They give the same results
 * on every input and differ only in speed. AUTO: the widest the CPU has. */
typedef enum {
  MODEL_JSON_KERNEL_AUTO = 0,
  MODEL_JSON_KERNEL_SCALAR,
  MODEL_JSON_KERNEL_SSE2,
  MODEL_JSON_KERNEL_AVX2
} model_json_kernel_t;

/* Whether this build and this CPU can run kernel k. */
bool model_json_kernel_available(model_json_kernel_t k);
/* The kernel model_json_scan() uses: the forced one, else the widest. */
model_json_kernel_t model_json_kernel(void);
/* "auto", "scalar", "sse2", "avx2". */
const char *model_json_kernel_name(model_json_kernel_t k);
/* For tests that compare the kernels: makes every later scan, in every
 * thread, use kernel k (AUTO: back to the widest). Not thread-safe; call it
 * only while no scan runs. Returns false (and changes nothing) when k is not
 * available. */
bool model_json_force_kernel(model_json_kernel_t k);

/* Offset of the first byte of s[0..n) that does not start a valid UTF-8
 * sequence (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF, no
 * truncated sequence); n when all of it is valid (json_text.c). */
size_t model_utf8_check(const char *s, size_t n);

/* Unescapes the content of a string that model_json_scan() accepted
 * (json_text.c): s[0..n) is the text between the quotes. Writes at most cap bytes to out
 * (no NUL) and returns the full decoded length, which may exceed cap. */
size_t model_json_unescape(const char *s, size_t n, bool escaped, char *out, size_t cap);

/* Writes s[0..n) to out (size cap >= 8, always NUL-terminated) as printable
 * ASCII for error details (json_detail.c): bytes outside 0x20..0x7E and '"'
 * and '\' become \xHH or \" \\; past max_chars output characters it ends
 * with "...".
 * Returns the length written. */
size_t model_json_escape_detail(const char *s, size_t n, size_t max_chars, char *out, size_t cap);

#endif

/* The scan loop of json_scan.c, written once and compiled once per string
 * kernel (json_simd.h). Included only by json_scan.c, after it defines:
 *   SCAN_NAME(x)  the name of this instance's functions (x##_sse2, ...)
 *   SCAN_STOP     the kernel (p, end, lo): first byte of [p, end) a string
 *                 scan stops at, in a buffer that starts at lo
 *   SCAN_IDLEN    the id characters that start the 16 bytes at p (0..16)
 *   SCAN_WS16     the whitespace bytes of the 16 at p (bit i: byte i)
 *   SCAN_ATTR     function attributes of the instance (a target, or nothing)
 * and with the helpers of json_scan.c in scope; it undefines them at its end,
 * ready for the next instance. Every instance does exactly
 * the same work, so the instances must agree byte for byte on every input.
 *
 * UTF-8 is validated in this same pass: outside strings the grammar allows
 * ASCII only, and inside a string the kernel stops at every byte >= 0x80,
 * where the sequence starting there is checked (model_json_utf8_seq) and
 * stepped over.
 * A bad sequence ends the scan with utf8_bad set; model_json_scan() then
 * reports it as the whole-buffer check would. */

/* p is at an opening quote. Returns the closing quote, or NULL after
 * setting the error. Inlined into both call sites: strings are most of the
 * text, and the call costs more than a short string's scan. */
SCAN_ATTR static inline __attribute__((always_inline)) const unsigned char *
SCAN_NAME(lex_string)(scan_t *s, const unsigned char *p, bool *escaped, bool is_key) {
  const unsigned char *const end = s->end;
  const unsigned char *const open = p;
  bool esc = false;
  p++;
  for (;;) {
    p = SCAN_STOP(p, end, s->base);
    if (p == end) {
      set_error(s, MODEL_JSON_ERR_SYNTAX, open, "invalid JSON: %s", "unterminated string starting");
      return NULL;
    }
    if (*p == '"') {
      *escaped = esc;
      return p;
    }
    if (*p >= 0x80) {
      do {
        size_t n = model_json_utf8_seq(p, (size_t)(end - p));
        if (!n) {
          s->utf8_bad = true;
          return NULL;
        }
        p += n;
      } while (p < end && *p >= 0x80);
      continue;
    }
    if (*p < 0x20) {
      set_error(s, MODEL_JSON_ERR_SYNTAX, p, "invalid JSON: %s", "control character in string");
      return NULL;
    }
    esc = true;
    p = lex_escape(s, p, open, is_key);
    if (!p) return NULL;
  }
}

SCAN_ATTR static bool SCAN_NAME(scan_run)(scan_t *s, const model_json_schema_t *schema,
                                          model_json_value_t *root_vals, model_json_value_t *sub_vals) {
  const unsigned char *const base = s->base, *const end = s->end;
  const unsigned char *p = skip_ws(base, end);
  model_json_value_t *cap = NULL; /* slot for the value about to be scanned */
  uint8_t next_role = ROLE_ROOT;  /* role of an object value about to be scanned */
  frame_t *f = NULL; /* the innermost open container, NULL at the top level */
#define POP() (s->depth--, f = s->depth ? &s->frames[s->depth - 1] : NULL)
  if (p < end) s->res->top = top_type(*p); /* reported only when the whole text scans */

  model_json_value_t *c; /* slot of the value being scanned, or NULL */

value: {
  c = cap;
  uint8_t role = next_role;
  cap = NULL;
  next_role = ROLE_OTHER;
  if (p == end) SYNTAX(p, "unexpected end of input, expected a value");
  switch (*p) {
  case '{':
  case '[':
    if (s->depth == MODEL_JSON_MAX_DEPTH) SYNTAX(p, "nesting deeper than 64");
    if (c) {
      c->type = *p == '{' ? MODEL_JSON_OBJECT : MODEL_JSON_ARRAY;
      c->start = (size_t)(p - base);
    }
    f = &s->frames[s->depth];
    f->name_key = (s->depth > 0 && !s->frames[s->depth - 1].is_array) ? s->nkeys - 1 : NO_KEY;
    s->depth++;
    f->big = 0;
    f->index = 0;
    f->seen = 0;
    f->key_base = s->nkeys;
    if (*p == '{') {
      f->is_array = 0;
      f->role = role;
      p = skip_ws(p + 1, end);
      if (p < end && *p == '}') {
        p++;
        POP();
        goto after_value;
      }
      goto key;
    }
    f->is_array = 1;
    f->role = ROLE_OTHER;
    p = skip_ws(p + 1, end);
    if (p < end && *p == ']') {
      p++;
      POP();
      goto after_value;
    }
    goto value;
  case '"':
    goto string_value;
  case '-': case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': case '8':
  case '9': {
    const unsigned char *st = p, *at;
    const char *why;
    bool fe;
    p = lex_number(p, end, &fe, &at, &why);
    if (!p) SYNTAX(at, why);
    if (c) {
      c->type = MODEL_JSON_NUMBER;
      c->frac_exp = fe;
      c->negative = *st == '-';
      c->start = (size_t)(st - base);
      c->len = (size_t)(p - st);
    }
    goto after_value;
  }
  case 't':
  case 'f':
  case 'n': {
    model_json_type_t type;
    size_t n = lex_literal(p, end, &type);
    if (!n) SYNTAX(p, "invalid literal");
    if (c) {
      c->type = type;
      c->start = (size_t)(p - base);
      c->len = n;
    }
    p += n;
    goto after_value;
  }
  default:
    SYNTAX(p, "unexpected character, expected a value");
  }
}

string_value: {
  /* p is at the opening quote of a value; c is its slot. */
  bool esc;
  const unsigned char *q = SCAN_NAME(lex_string)(s, p, &esc, false);
  if (!q) return false;
  if (c) {
    c->type = MODEL_JSON_STRING;
    c->escaped = esc;
    c->ident = false;
    c->start = (size_t)(p + 1 - base);
    c->len = (size_t)(q - p - 1);
  }
  p = q + 1;
  goto after_value;
}

after_value:
  /* The common case first: a member of an object followed by ',' and the
   * next key's quote, no whitespace. */
  if (end - p >= 2 && p[0] == ',' && p[1] == '"' && f && !f->is_array) {
    p++;
    goto key_quote;
  }
  p = skip_ws(p, end);
  if (s->depth == 0) {
    if (p != end) SYNTAX(p, "unexpected data after the top-level value");
    return true;
  }
  if (p == end) SYNTAX(p, "unexpected end of input in a container");
  f = &s->frames[s->depth - 1];
  if (f->is_array) {
    if (*p == ',') {
      f->index++;
      p = skip_ws(p + 1, end);
      goto value;
    }
    if (*p == ']') {
      p++;
      POP();
      goto after_value;
    }
    SYNTAX(p, "expected ',' or ']'");
  }
  if (*p == ',') {
    p = skip_ws(p + 1, end);
    goto key;
  }
  if (*p == '}') {
    p++;
    if (f->big) check_big_object(s, f);
    s->nkeys = f->key_base;
    POP();
    goto after_value;
  }
  SYNTAX(p, "expected ',' or '}'");

key: {
  /* f is the innermost frame, an object; p is past whitespace. */
  if (p == end || *p != '"') SYNTAX(p, "expected a string key");
key_quote:; /* p is at the key's opening quote */
  bool esc = false;
  const unsigned char *q = SCAN_NAME(lex_string)(s, p, &esc, true);
  if (!q) return false;
  if (s->nkeys == s->cap) grow_keys(s);
  keyrec_t *k = &s->keys[s->nkeys];
  k->off = (size_t)(p + 1 - base);
  k->len = (size_t)(q - p - 1);
  k->esc = esc;
  k->known = -1;
  if (f->role != ROLE_OTHER) {
    int i = f->role == ROLE_ROOT ? match_key(s, k, schema->root_keys, schema->root_lens, schema->n_root)
                                 : match_key(s, k, schema->sub_keys, schema->sub_lens, schema->n_sub);
    if (i >= 0) {
      k->known = (int8_t)i;
      if (f->seen & (1u << i)) {
        note_dup(s, k);
      } else {
        f->seen |= 1u << i;
        if (f->role == ROLE_ROOT) {
          cap = &root_vals[i];
          if (i == schema->sub_index) next_role = ROLE_SUB;
        } else {
          cap = &sub_vals[i];
        }
      }
    }
  }
  if (k->known < 0) unknown_key(s, f, k);
  s->nkeys++;
  if (end - q >= 3 && q[1] == ':' && q[2] > ' ') { /* the common case: no whitespace */
    p = q + 2;
    if (*p == '"') { /* and a string value */
      c = cap;
      cap = NULL;
      next_role = ROLE_OTHER;
      goto string_value;
    }
    goto value;
  }
  p = skip_ws(q + 1, end);
  if (p == end || *p != ':') SYNTAX(p, "expected ':' after an object key");
  p = skip_ws(p + 1, end);
  goto value;
}
}
#undef POP

/* The plain path (see json_scan.c). plain_object scans the members of one
 * object of the plain shape: p is past its '{', slots its schema names and
 * vals where their values go. Keys come in any order, each one a schema name written
 * without escapes, with any whitespace where JSON allows it. A member's
 * value is a string (its escapes checked as the full scan checks them: an
 * escape that makes U+0000 or a lone surrogate leaves the shape), a number,
 * a literal, or, when
 * the member is name sub_index, an object that plain_sub scans the same way
 * with the schema's sub names. It returns the byte after the closing '}',
 * with every member's value captured as scan_run captures it; or NULL as
 * soon as the text leaves the shape (the caller then scans it again with
 * scan_run, which reports what is wrong if anything). The common members,
 * a string or a positive integer, are inline; everything else is out of
 * line, to keep the loop's state in registers.
 *
 * The text ends with a '}' (end[-1]: the caller trims the whitespace after
 * it), which serves as a sentinel: every step inside an object stops at or
 * before a '}' (a key's pattern ends with ':', a string with '"', a number
 * at its first other byte, whitespace at its first other byte), so a byte
 * is read without comparing p with end, except after a nested object, which
 * may end at that last '}'. */

SCAN_ATTR static const unsigned char *SCAN_NAME(plain_sub)(plain_t *x, const unsigned char *p);

/* Where the value of entry e's key at kp starts (maybe after whitespace,
 * which the caller skips), given k, where kp's 16 bytes are read (kp, or
 * tail16's copy), and eq, the bytes there equal to e's pattern: past the
 * ':' when they hold the whole pattern; when they hold the name and its
 * quote (as some encoders write "id" : ...), past the separator, the
 * whitespace, ':' and whitespace from there to the value; else NULL.
 *
 * A producer writes the same separator after every key ("\t:\t", " : "),
 * so the last one found (x->sep, its bytes, up to 4, each separator
 * starting with whitespace; carried from line to line in last_sep) is
 * tried first, in one word compare at e->sep_at. Else it is found in one
 * whitespace mask of the 16 bytes (SCAN_WS16), whichever of the four bytes
 * and however many, and remembered. Bytes of tail16's padding are zeros, neither whitespace nor
 * ':', and the text's last '}' stops both runs, so a position the mask
 * gives is in the text. */
SCAN_ATTR static inline __attribute__((always_inline)) const unsigned char *
SCAN_NAME(key_value)(plain_t *x, const unsigned char *kp, const unsigned char *k, const model_json_slot_t *e,
                     unsigned eq) {
  if (__builtin_expect((eq & e->mask) == e->mask, 1)) return kp + e->skip;
  if ((eq & e->qmask) != e->qmask) return NULL; /* the name and its quote (bit 16 for SLOT_NONE: never equal) */
  unsigned j = e->sep_at; /* the byte after the key's closing quote, or 0 (model_json_slot_t) */
  uint32_t w;
  memcpy(&w, k + j, 4);
  if ((w & x->sep_mask) == x->sep) return kp + j + x->sep_len;
  unsigned i = e->quote + 1u; /* the byte after the key's closing quote */
  const unsigned s = i;
  unsigned other = ~SCAN_WS16(k); /* bits 16 and up set: a run ends by byte 16 */
  i += (unsigned)__builtin_ctz(other >> i);
  if (__builtin_expect(i >= 16, 0)) {
    /* whitespace to the end of the 16 (k is kp then: tail16's padding
     * stops a run): the rest of it byte by byte, up to the '}' at worst */
    const unsigned char *q = plain_ws(kp + 16);
    return *q == ':' ? q + 1 : NULL;
  }
  if (k[i] != ':') return NULL;
  i++;
  i += (unsigned)__builtin_ctz(other >> i); /* at most 16: the caller skips the rest */
  if (j && i - s <= 4) { /* w holds it */
    x->sep_len = i - s;
    x->sep_mask = (uint32_t)LOW_BYTES(i - s);
    x->sep = w & x->sep_mask;
  }
  return kp + i;
}

/* plain_key for a slot that several names share, or none, or a key that
 * is not its slot's name: kp's 16 bytes (k: where they are read) compared
 * with each name of the slot in turn. */
SCAN_ATTR static __attribute__((noinline)) const model_json_slot_t *
SCAN_NAME(plain_key_shared)(plain_t *x, const unsigned char *kp, const unsigned char *k,
                            const model_json_slots_t *slots, const unsigned char **value) {
  unsigned h = slot_of(k);
  if (slots->count[h] < 2) return NULL;
  for (size_t i = 0; i < slots->n; i++) {
    const model_json_slot_t *e = &slots->name[i];
    if (e->skip && slot_of(e->pat) == h && (*value = SCAN_NAME(key_value)(x, kp, k, e, pattern_eq(k, e)))) return e;
  }
  return NULL;
}

/* The plain path's key lookup: the entry of the name whose key, with its
 * '"' and ':' (whitespace around the ':' allowed), starts at kp, or NULL;
 * *value: the byte after the ':' (or after whitespace past it). Before
 * `safe` (end - 16), 16 bytes are readable at kp; past it, the bytes left
 * are compared from tail16 (a pattern's bytes are nonzero, so it never
 * matches the padding). */
SCAN_ATTR static inline __attribute__((always_inline)) const model_json_slot_t *
SCAN_NAME(plain_key)(plain_t *x, const unsigned char *kp, const model_json_slots_t *slots,
                     const unsigned char **value) {
  unsigned char pad[32];
  const unsigned char *k = __builtin_expect(kp > x->safe, 0) ? tail16(kp, x->base, x->end, pad) : kp;
  const model_json_slot_t *e = &slots->slot[slot_of(k)];
  unsigned eq = pattern_eq(k, e);
  if (__builtin_expect((eq & e->mask) == e->mask, 1)) {
    *value = kp + e->skip;
    return e;
  }
  if ((*value = SCAN_NAME(key_value)(x, kp, k, e, eq))) return e;
  const unsigned char *v; /* its own: the call takes its address, not that of the caller's */
  e = SCAN_NAME(plain_key_shared)(x, kp, k, slots, &v);
  *value = v;
  return e;
}

/* The rest of a string from q, a byte the kernel stopped at that is not
 * its closing quote: UTF-8 sequences and escapes are checked and stepped
 * over (*esc set at an escape). Returns the closing quote, or NULL at a
 * control byte, bad UTF-8, an escape the full scan is to decide, or the end
 * of the text. */
SCAN_ATTR static __attribute__((noinline)) const unsigned char *SCAN_NAME(plain_string_rest)(
    const unsigned char *base, const unsigned char *q, const unsigned char *end, bool *esc) {
  for (;;) {
    if (q == end) return NULL;
    if (*q == '"') return q;
    if (*q == '\\') {
      *esc = true;
      q = plain_escape(q, end);
      if (!q) return NULL;
      q = SCAN_STOP(q, end, base);
      continue;
    }
    if (*q < 0x80) return NULL; /* a control byte */
    do {
      size_t k = model_json_utf8_seq(q, (size_t)(end - q));
      if (!k) return NULL;
      q += k;
    } while (q < end && *q >= 0x80);
    q = SCAN_STOP(q, end, base);
  }
}

/* A value other than a string whose quote comes at once: p is where it
 * should start (maybe whitespace first); c its slot; `sub`: an object is
 * scanned as the schema's sub object. Returns the byte after it, or NULL. */
SCAN_ATTR static __attribute__((noinline)) const unsigned char *
SCAN_NAME(plain_value)(plain_t *x, const unsigned char *p, model_json_value_t *c, bool sub) {
  const unsigned char *const base = x->base, *const end = x->end;
  if (p < end && *p <= ' ') p = skip_ws(p, end);
  if (p == end) return NULL;
  switch (*p) {
  case '"': {
    bool esc = false;
    const unsigned char *q = SCAN_STOP(p + 1, end, base);
    if (q == end || *q != '"') q = SCAN_NAME(plain_string_rest)(base, q, end, &esc);
    if (!q) return NULL;
    c->type = MODEL_JSON_STRING;
    c->escaped = esc;
    c->ident = false;
    c->start = (size_t)(p + 1 - base);
    c->len = (size_t)(q - p - 1);
    return q + 1;
  }
  case '-': case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': case '8':
  case '9': {
    const unsigned char *st = p, *at;
    const char *why;
    bool fe;
    p = lex_number(p, end, &fe, &at, &why);
    if (!p) return NULL;
    c->type = MODEL_JSON_NUMBER;
    c->frac_exp = fe;
    c->negative = *st == '-';
    c->start = (size_t)(st - base);
    c->len = (size_t)(p - st);
    return p;
  }
  case 't':
  case 'f':
  case 'n': {
    model_json_type_t type;
    size_t n = lex_literal(p, end, &type);
    if (!n) return NULL;
    c->type = type;
    c->start = (size_t)(p - base);
    c->len = n;
    return p + n;
  }
  case '{':
    if (!sub || !x->schema->sub_slots) return NULL; /* no slots: the full scan takes the sub object */
    c->type = MODEL_JSON_OBJECT;
    c->start = (size_t)(p - base);
    return SCAN_NAME(plain_sub)(x, p + 1);
  default: return NULL;
  }
}

SCAN_ATTR static inline __attribute__((always_inline)) const unsigned char *
SCAN_NAME(plain_object)(plain_t *x, const unsigned char *p, const model_json_slots_t *slots,
                        model_json_value_t *vals, int sub_index) {
  const unsigned char *const base = x->base;
  p = plain_ws(p);
  if (*p == '}') return p + 1;
  for (;;) {
    /* p is at a key's opening quote, or the text leaves the shape */
    if (*p != '"') return NULL;
    const unsigned char *v; /* the byte after the key's ':' */
    const model_json_slot_t *e = SCAN_NAME(plain_key)(x, p + 1, slots, &v);
    if (!e) return NULL;
    /* Every value starts ABSENT (model_json_scan): one already captured
     * is the name met before. */
    model_json_value_t *c = (model_json_value_t *)(void *)((char *)vals + e->at); /* &vals[e->name] */
    if (c->type != MODEL_JSON_ABSENT) return NULL;
    p = v;
    /* p is at the value of member i, maybe after whitespace */
    if (*p != '"') p = plain_ws(p);
    if (*p == '"') {
      p++;
      const unsigned char *q = p;
      bool ident = false, esc = false;
      if (e->ident) {
        /* An id: its bytes are the trailing ones of the mask of its 16
         * (tail16's near the end; the '}' at end[-1] is no id byte, so
         * the byte after them is in the text). */
        unsigned char pad[32];
        size_t n = SCAN_IDLEN(__builtin_expect(p <= x->safe, 1) ? p : tail16(p, base, x->end, pad));
        ident = n > 0 && p[n] == '"';
        q = p + n;
      }
      if (!ident) {
        q = SCAN_STOP(p, x->end, base);
        if (q == x->end || *q != '"') {
          bool e_rest = false; /* its own: the call takes its address, not that of esc */
          q = SCAN_NAME(plain_string_rest)(base, q, x->end, &e_rest);
          if (!q) return NULL;
          esc = e_rest;
        }
      }
      c->type = MODEL_JSON_STRING;
      c->escaped = esc;
      c->ident = ident;
      c->start = (size_t)(p - base);
      c->len = (size_t)(q - p);
      p = q + 1;
    } else if ((unsigned)(*p - '1') < 9u) {
      /* A positive integer with no fraction or exponent; any other
       * number goes out of line. */
      const unsigned char *st = p;
      do p++;
      while (is_digit(*p));
      if (*p == '.' || *p == 'e' || *p == 'E') {
        p = SCAN_NAME(plain_value)(x, st, c, false);
        if (!p) return NULL;
      } else {
        c->type = MODEL_JSON_NUMBER;
        c->frac_exp = false;
        c->negative = false;
        c->start = (size_t)(st - base);
        c->len = (size_t)(p - st);
      }
    } else {
      p = SCAN_NAME(plain_value)(x, p, c, (int)e->name == sub_index);
      if (!p || p == x->end) return NULL;
    }
    /* then ',' and the next key's quote, or the object's end */
    if (*p != ',') {
      p = plain_ws(p);
      if (*p != ',') return *p == '}' ? p + 1 : NULL;
    }
    p++;
    if (*p != '"') p = plain_ws(p);
  }
}

/* The sub object (a command's `data`): its members' own objects are not
 * plain (sub_index -1). */
SCAN_ATTR static const unsigned char *SCAN_NAME(plain_sub)(plain_t *x, const unsigned char *p) {
  return SCAN_NAME(plain_object)(x, p, x->schema->sub_slots, x->sub_vals, -1);
}

/* This kernel's whole scan (model_json_scan() has marked every value
 * absent and the result OK): the plain path, whose text of one plain object
 * (whitespace around it) is then valid with its values captured; else the
 * full scan, from the start. */
SCAN_ATTR static bool SCAN_NAME(scan)(const char *buf, size_t len, const model_json_schema_t *schema,
                                      model_json_value_t *root_vals, model_json_value_t *sub_vals,
                                      model_json_result_t *res) {
  const unsigned char *base = (const unsigned char *)buf, *end = base + len;
  const unsigned char *p = base, *last = end; /* last: the end of the text but whitespace */
  if (__builtin_expect(len < 2 || *p != '{' || last[-1] != '}', 0)) { /* whitespace around the text, or no object */
    if (len >= 3 && *p == '{' && last[-2] == '}' && is_ws(last[-1])) {
      last--; /* one byte after the object, as a line ended with CR LF has */
    } else {
      p = skip_ws(base, end);
      while (last > p && is_ws(last[-1])) last--;
      if (last - p < 2 || *p != '{' || last[-1] != '}') goto full;
    }
  }
  if (schema->root_slots) { /* (without the sub list's slots, plain_value gives its object up) */
    plain_t x = {base, last, last - base >= 16 ? last - 16 : base, schema, sub_vals,
                 last_sep.sep, last_sep.mask, last_sep.len};
    p = SCAN_NAME(plain_object)(&x, p + 1, schema->root_slots, root_vals, schema->sub_index);
    last_sep = (sep_t){x.sep, x.sep_mask, x.sep_len};
    if (p == last) {
      res->top = MODEL_JSON_OBJECT;
      return true;
    }
  }
full:
  return scan_full(SCAN_NAME(scan_run), buf, len, schema, root_vals, sub_vals, res);
}

#undef SCAN_NAME
#undef SCAN_STOP
#undef SCAN_IDLEN
#undef SCAN_WS16
#undef SCAN_ATTR

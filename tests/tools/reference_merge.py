#!/usr/bin/env python3
"""Reference merge: an independent, deliberately plain model of the merge
rule and the stored document in its JSON form (docs/DOCUMENT.md), used to
cross-check `aggregator replay`.

    reference_merge.py COMMANDS.jsonl [REJECTS.jsonl] > documents.jsonl

Merges every line of COMMANDS except the line numbers listed in REJECTS
(the replay's rejects file: validation is checked elsewhere), and prints the
documents sorted by _id, with "updatedAt":"X" (the time of the write is not
part of the merge). Points print as the shortest repr, whole numbers
without a fraction, as the C codec does.
"""
import datetime
import json
import re
import sys

TS = re.compile(r'(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?Z')


def date(s):
    """RFC 3339 -> the JSON form's millisecond string (finer fractions truncate)."""
    if s is None:
        return None
    y, mo, d, h, mi, se, frac = TS.fullmatch(s).groups()
    dt = datetime.datetime(int(y), int(mo), int(d), int(h), int(mi), int(se))
    return dt.strftime('%Y-%m-%dT%H:%M:%S') + '.' + (frac or '0').ljust(3, '0')[:3] + 'Z'


def number(v):
    if v is None:
        return None
    return int(v) if float(v).is_integer() else float(v)


def main():
    skip = set()
    if len(sys.argv) > 2:
        with open(sys.argv[2], encoding='utf-8') as f:
            skip = {json.loads(line)['line'] for line in f}
    with open(sys.argv[1], 'rb') as f:
        lines = f.read().split(b'\n')
    if lines and lines[-1] == b'':
        lines.pop()  # the newline that ends the last line starts no empty line
    aggs = {}
    for n, raw in enumerate(lines, 1):
        if n in skip:
            continue
        c = json.loads(raw)
        a = aggs.setdefault((c['tenant'], c['assignment']), {'header': None, 'students': {}})
        stamp = (c['version'], c['id'].encode())  # version numerically, then id bytewise
        t, d = c['type'], c.get('data') or {}
        if t == 'assignment.deleted':
            slot, key, val = a, 'header', {'status': 'deleted'}
        elif t == 'assignment.upserted':
            slot, key = a, 'header'
            val = {'class': d['class'], 'title': d['title'], 'status': d['status'],
                   'dueAt': date(d.get('dueAt')), 'points': number(d.get('points'))}
        else:
            slot = a['students'].setdefault(c['student'], {})
            if t.startswith('roster.'):
                key, val = 'member', {'assigned': t == 'roster.assigned'}
            elif t == 'submission.updated':
                key = 'submission'
                val = {'status': d['status'], 'submittedAt': date(d.get('submittedAt')),
                       'returnedAt': date(d.get('returnedAt'))}
            else:
                key, val = 'grade', {'points': number(d.get('points')), 'feedback': d.get('feedback')}
        cur = slot.get(key)
        if cur is None or stamp > cur[0]:  # an equal stamp changes nothing
            slot[key] = (stamp, val)

    def with_stamp(entry):
        (v, c), val = entry
        return dict(val, v=v, c=c.decode())

    out = sys.stdout
    for key in sorted(aggs, key=lambda k: (k[0] + '/' + k[1]).encode()):
        a = aggs[key]
        students, counts = {}, dict(assigned=0, submitted=0, returned=0, graded=0)
        for sid in sorted(a['students'], key=str.encode):
            s = {k: with_stamp(a['students'][sid][k]) for k in ('member', 'submission', 'grade')
                 if k in a['students'][sid]}
            students[sid] = s
            if s.get('member', {}).get('assigned'):
                counts['assigned'] += 1
                status = s.get('submission', {}).get('status')
                counts['submitted'] += status == 'submitted'
                counts['returned'] += status == 'returned'
                counts['graded'] += 'grade' in s and s['grade']['points'] is not None
        doc = {'_id': key[0] + '/' + key[1], 'tenant': key[0], 'assignment': key[1],
               'header': with_stamp(a['header']) if a['header'] else None,
               'students': students, 'counts': counts, 'rev': 1, 'updatedAt': 'X'}
        out.write(json.dumps(doc, ensure_ascii=False, separators=(',', ':')) + '\n')


if __name__ == '__main__':
    main()

#!/usr/bin/env python3
"""Count the leaf results in KTAP/TAP streams (kselftest, KUnit, this harness).

usage: ktap_summary.py FILE... -- prints one line per failed or skipped test and
the totals line "N passed, N failed, N skipped"; exits 1 when a test failed or
when a file holds no result at all. A failed result marked "# TODO" (TAP's
expected failure) counts as skipped and is listed.

Nesting is read from the two conventions in use: kselftest's runner prefixes a
test program's own output with "# ", KUnit indents subtests by four spaces. A
result line that closes a group of deeper results is not counted again, unless
it failed while all its children passed (a crash or a timeout of the program).
"""
import re
import sys

RESULT = re.compile(r'^(not ok|ok)\s+\d+\s*-?\s*([^#]*?)\s*(?:#\s*(.*))?$')


def parse(lines):
    """Yield (depth, ok, name, directive) for each result line."""
    for raw in lines:
        line = raw.rstrip('\n')
        depth = 0
        while True:
            if line.startswith('# ') and RESULT.match(line[2:].lstrip()) or \
               line.startswith('# ') and line[2:].startswith(('# ', '    ')):
                line, depth = line[2:], depth + 1
            elif line.startswith('    '):
                line, depth = line[4:], depth + 1
            else:
                break
        m = RESULT.match(line.strip())
        if m:
            yield depth, m.group(1) == 'ok', m.group(2), (m.group(3) or '')


def summarize(path):
    with open(path, errors='replace') as f:
        results = list(parse(f))
    counts = {'pass': 0, 'fail': 0, 'skip': 0}
    notes = []
    # child_seen[d] is True when results at depth d+1 appeared since the last result at depth d.
    child_seen = {}
    child_failed = {}
    for depth, ok, name, directive in results:
        had_children = child_seen.pop(depth, False)
        kids_failed = child_failed.pop(depth, False)
        # report this result upwards
        child_seen[depth - 1] = True
        if not ok:
            child_failed[depth - 1] = True
        if had_children and (ok or kids_failed):
            continue
        if directive.upper().startswith('SKIP'):
            counts['skip'] += 1
            notes.append(f'SKIP {name}: {directive[4:].strip()}')
        elif directive.upper().startswith('TODO') and not ok:
            # TAP's expected failure: neither passed nor failed, and said
            counts['skip'] += 1
            notes.append(f'TODO {name}: {directive[4:].strip()}')
        elif ok or directive.upper().startswith('XFAIL'):
            counts['pass'] += 1
        else:
            counts['fail'] += 1
            notes.append(f'FAIL {name}')
    return counts, notes, len(results)


def main(argv):
    if not argv or argv[0] in ('-h', '--help'):
        print(__doc__.strip())
        return 0 if argv else 2
    total = {'pass': 0, 'fail': 0, 'skip': 0}
    empty = []
    for path in argv:
        counts, notes, n = summarize(path)
        if n == 0:
            empty.append(path)
        for note in notes:
            print(f'{note}  [{path}]')
        for k in total:
            total[k] += counts[k]
    for path in empty:
        print(f'FAIL no test result in {path}')
        total['fail'] += 1
    print(f"{total['pass']} passed, {total['fail']} failed, {total['skip']} skipped")
    return 1 if total['fail'] else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))

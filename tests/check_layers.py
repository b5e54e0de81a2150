#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Checks the include direction stated in control/layers.txt.

Fails when a quoted include in a layered file runs to a later layer, names a
file that does not exist (every project include is written from the
repository root), or when modules (x.c with x.h) include each other in a
circle. With --self-test it checks itself: on a scratch copy of the tree, a
wrong-way include and a two-module circle must each make it fail.

usage: check_layers.py SOURCE_ROOT
       check_layers.py --self-test SOURCE_ROOT
"""
import os
import re
import shutil
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def read_rules(root):
    layers, allow, known = [], set(), set()
    with open(os.path.join(root, 'control', 'layers.txt')) as f:
        for n, line in enumerate(f, 1):
            line = line.split('#', 1)[0].strip()
            if not line:
                continue
            words = line.split()
            if words[0] == 'layer' and len(words) >= 2:
                layers.append(words[1:])
            elif words[0] == 'allow' and len(words) >= 4 and words[2] == '->':
                allow.add((words[1], words[3]))
            elif words[0] == 'circle' and len(words) >= 3:
                known.add(tuple(sorted(words[1:])))
            else:
                sys.exit('control/layers.txt:%d: cannot read "%s"' % (n, line))
    return layers, allow, known


def layer_of(root, layers):
    """Maps every layered file (relative path) to its layer's index."""
    where = {}
    for i, names in enumerate(layers):
        for name in names:
            path = os.path.join(root, name)
            if os.path.isdir(path):
                for f in sorted(os.listdir(path)):
                    if f.endswith(('.c', '.h')) and os.path.isfile(os.path.join(path, f)):
                        where.setdefault(os.path.join(name, f), i)
            elif os.path.isfile(path):
                where[name] = i
            else:
                sys.exit('control/layers.txt names %s, which does not exist' % name)
    # A file named on its own wins over its folder's line.
    for i, names in enumerate(layers):
        for name in names:
            if os.path.isfile(os.path.join(root, name)):
                where[name] = i
    return where


def module(path):
    """x.c, x.h and x's private x_internal.h are one module."""
    stem = os.path.splitext(path)[0]
    return stem[:-len('_internal')] if stem.endswith('_internal') else stem


def circles(edges):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def check(root):
    layers, allow, known = read_rules(root)
    where = layer_of(root, layers)
    errors, edges, used = [], {}, set()
    for path in sorted(where):
        with open(os.path.join(root, path)) as f:
            text = f.read()
        for m in INCLUDE.finditer(text):
            inc = m.group(1)
            line = text.count('\n', 0, m.start()) + 1
            target = os.path.normpath(inc)
            if not os.path.isfile(os.path.join(root, target)) or inc.startswith('.'):
                # The one kind of quoted include not written from the root: a
                # header generated into the build tree next to its loader.
                if inc.endswith('.skel.h') and path.startswith('bpf/'):
                    continue
                errors.append('%s:%d: "%s" is not a path from the repository root' %
                              (path, line, inc))
                continue
            if target not in where:
                continue
            if (path, target) in allow:
                used.add((path, target))
                continue
            if where[target] > where[path]:
                errors.append('%s:%d: includes %s, a later layer (%s after %s)' %
                              (path, line, target, ' '.join(layers[where[target]]),
                               ' '.join(layers[where[path]])))
            a, b = module(path), module(target)
            if a != b:
                edges.setdefault(a, set()).add(b)
    found = set()
    for comp in circles(edges):
        found.add(tuple(comp))
        if tuple(comp) not in known:
            errors.append('modules include each other in a circle: %s' % ' -> '.join(comp))
    for comp in sorted(known - found):
        errors.append('control/layers.txt names a circle that is gone: %s' % ' '.join(comp))
    for pair in sorted(allow - used):
        errors.append('control/layers.txt allows %s -> %s, which is not included' % pair)
    return errors, len(where)


def self_test(root):
    """A wrong-way include and a circle, each on a scratch copy, must fail."""
    bad = 0
    cases = {
        'wrong-way include': [('control/base/loop.c', '#include "control/model/config.h"\n')],
        'circle': [('control/base/loop.h', '#include "control/base/persist.h"\n'),
                   ('control/base/persist.h', '#include "control/base/loop.h"\n')],
    }
    for name, edits in cases.items():
        scratch = tempfile.mkdtemp()
        try:
            for d in ('bpf', 'dataplane', 'control'):
                shutil.copytree(os.path.join(root, d), os.path.join(scratch, d),
                                ignore=shutil.ignore_patterns('spillctl', '*.py', '*.md'))
            for path, line in edits:
                with open(os.path.join(scratch, path), 'a') as f:
                    f.write(line)
            errors, _ = check(scratch)
            if errors:
                print('self-test %s: fails as it should: %s' % (name, errors[0]))
            else:
                print('self-test %s: NOT caught' % name)
                bad += 1
        finally:
            shutil.rmtree(scratch)
    return bad


def main():
    args = sys.argv[1:]
    if args[:1] == ['--self-test'] and len(args) == 2:
        sys.exit(1 if self_test(args[1]) else 0)
    if len(args) != 1:
        sys.exit(__doc__)
    errors, n = check(args[0])
    for e in errors:
        print('FAIL: ' + e)
    print('%d layered files checked, %d problems' % (n, len(errors)))
    sys.exit(1 if errors else 0)


if __name__ == '__main__':
    main()

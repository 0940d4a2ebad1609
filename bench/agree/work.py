# SPDX-License-Identifier: MIT
# bench/agree/work.py - a CPU-bound Python program for bench/perf_agree.py:
# integer loops, dict and string work, sorting and a recursive function,
# so the interpreter's time spreads over several of its C functions.
import sys


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def words(n):
    out = {}
    for i in range(n):
        w = format(i * 2654435761 % 1000003, 'x')
        out[w] = out.get(w, 0) + len(w)
    return out


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    total = 0
    for _ in range(rounds):
        total += fib(24)
        d = words(60000)
        total += sum(sorted(d.values())[:100])
        total += len(' '.join(sorted(d)).split('a'))
        total += sum(x * x for x in range(200000) if x % 3)
    print(total)


main()

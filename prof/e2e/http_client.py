# SPDX-License-Identifier: MIT
"""http_client.py - the HTTP test's client (http_test.sh): raw requests,
so that malformed ones can be sent, each bounded in time.

    python3 http_client.py PORT status METHOD PATH [BODY]
        prints the status code (or "none" when the server closed without one)
    python3 http_client.py PORT body METHOD PATH [BODY]
        prints the status code, a newline, then the body
    python3 http_client.py PORT raw BYTES
        sends BYTES (Python escapes: \\r\\n) as they are; prints the status
    python3 http_client.py PORT abandon N
        opens N connections (within 30 s), sends half a request line on
        each, closes them all; prints how many connected
    python3 http_client.py PORT scrape N
        N times, a second apart: /heap, /allocs and /profile?seconds=1, as a
        scraper would; prints how many answers were not 200
    python3 http_client.py PORT slowloris N
        opens N connections that each send a request line, then a header
        line a second, never ending the headers; after 1 s (and while
        they go on) sends GET /debug/pprof/ and waits at most 5 s for it;
        prints its status ("none" if it got no answer), then closes all
    python3 http_client.py PORT trickle SECONDS
        one connection sending a header line a second for at most SECONDS
        seconds; prints "closed after N s" if the server closed it by
        then, else "open"
    python3 http_client.py PORT symbol EXE PID NAME
        POSTs the run-time address of NAME (nm of EXE, plus the load base
        of EXE in PID) to /debug/pprof/symbol; prints the answer
"""
import socket
import subprocess
import sys
import threading
import time

TIMEOUT = 60


def exchange(port, data, timeout=TIMEOUT):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.sendall(data)
    chunks = []
    while True:
        try:
            b = s.recv(65536)
        except (ConnectionResetError, socket.timeout):
            break
        if not b:
            break
        chunks.append(b)
    s.close()
    return b"".join(chunks)


def request(port, method, path, body=b""):
    head = "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" % (
        method, path)
    if body:
        head += "Content-Length: %d\r\n" % len(body)
    return exchange(port, head.encode() + b"\r\n" + body)


def status_of(resp):
    line = resp.split(b"\r\n", 1)[0].split()
    return line[1].decode() if len(line) > 1 else "none"


def body_of(resp):
    head, _, body = resp.partition(b"\r\n\r\n")
    if b"transfer-encoding: chunked" in head.lower():
        out = b""
        while body:
            size, _, rest = body.partition(b"\r\n")
            n = int(size, 16)
            if not n:
                break
            out += rest[:n]
            body = rest[n + 2:]
        return out
    return body


SLOW_HEAD = b"GET /debug/pprof/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"


def slow_open(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=2)
    s.sendall(SLOW_HEAD)
    return s


def trickle_line(s, i):
    """One more header line; False once the server has closed s."""
    try:
        s.sendall(b"X-Slow-%d: a\r\n" % i)
        s.settimeout(0)
        return s.recv(1) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False


def slowloris(port, n):
    socks = []
    for _ in range(n):
        try:
            socks.append(slow_open(port))
        except OSError:
            pass
    stop = threading.Event()

    def drip():
        i = 0
        while not stop.wait(1):
            i += 1
            for s in socks:
                trickle_line(s, i)

    t = threading.Thread(target=drip)
    t.start()
    time.sleep(1)
    req = b"GET /debug/pprof/ HTTP/1.1\r\nHost: 127.0.0.1\r\n" \
        b"Connection: close\r\n\r\n"
    try:
        status = status_of(exchange(port, req, timeout=5))
    except OSError:
        status = "none"
    stop.set()
    t.join()
    for s in socks:
        s.close()
    return status


def trickle(port, seconds):
    s = slow_open(port)
    t = time.monotonic()
    for i in range(seconds):
        time.sleep(1)
        if not trickle_line(s, i):
            s.close()
            return "closed after %d s" % round(time.monotonic() - t)
    s.close()
    return "open"


def symbol(port, exe, pid, name):
    nm = subprocess.run(["nm", exe], capture_output=True, text=True).stdout
    off = next(int(l.split()[0], 16) for l in nm.splitlines()
               if l.split()[-1] == name)
    base = None
    with open("/proc/%s/maps" % pid) as f:
        for l in f:
            parts = l.split()
            if len(parts) >= 6 and parts[5] == exe:
                start = int(parts[0].split("-")[0], 16)
                fileoff = int(parts[2], 16)
                if base is None or fileoff == 0:
                    base = start - fileoff
                if fileoff == 0:
                    break
    addr = base + off + 4  # inside the function
    resp = request(port, "POST", "/debug/pprof/symbol",
                   b"0x%x+0x10" % addr)
    return status_of(resp) + "\n" + body_of(resp).decode()


def main():
    port = int(sys.argv[1])
    cmd = sys.argv[2]
    if cmd in ("status", "body"):
        body = sys.argv[5].encode() if len(sys.argv) > 5 else b""
        resp = request(port, sys.argv[3], sys.argv[4], body)
        print(status_of(resp))
        if cmd == "body":
            sys.stdout.flush()
            sys.stdout.buffer.write(body_of(resp))
    elif cmd == "raw":
        data = sys.argv[3].encode().decode("unicode_escape").encode("latin1")
        print(status_of(exchange(port, data)))
    elif cmd == "abandon":
        socks = []
        deadline = time.monotonic() + 30
        for _ in range(int(sys.argv[3])):
            if time.monotonic() > deadline:
                break
            try:
                s = socket.create_connection(("127.0.0.1", port),
                                             timeout=0.5)
                s.sendall(b"GET /debug/pp")
                socks.append(s)
            except OSError:
                pass
        n = len(socks)
        for s in socks:
            s.close()
        print(n)
    elif cmd == "scrape":
        bad = 0
        for _ in range(int(sys.argv[3])):
            t = time.monotonic()
            for p in ("heap", "allocs", "profile?seconds=1"):
                resp = request(port, "GET", "/debug/pprof/" + p)
                bad += status_of(resp) != "200"
            left = 1 - (time.monotonic() - t)
            if left > 0:
                time.sleep(left)
        print(bad)
    elif cmd == "slowloris":
        print(slowloris(port, int(sys.argv[3])))
    elif cmd == "trickle":
        print(trickle(port, int(sys.argv[3])))
    elif cmd == "symbol":
        print(symbol(port, sys.argv[3], sys.argv[4], sys.argv[5]))


main()

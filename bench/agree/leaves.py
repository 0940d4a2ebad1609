# SPDX-License-Identifier: MIT
"""leaves.py - flat (self) shares per function from a profring-prof profile
and from a perf.data file, keyed the same way for bench/perf_agree.py.

Both tools name functions their own way: perf says `malloc` where our
symbolizer says `__libc_malloc` (aliases at one address), perf prints
`cfree@GLIBC_2.2.5`, and in stripped libraries (Debian's liblzma,
libsqlite3, most of python3.11) both print bare addresses, one per
instruction, which are no functions at all.  So neither tool's names are
compared.  Each sample's leaf address (the interrupted instruction, taken
as-is by both tools) is turned into (file, offset) through the tool's own
record of the mappings (the profile's Mapping table; perf's MMAP2 events),
then into the file's virtual address (its PT_LOAD headers), and that into
the start of the function holding it: the greatest function start at or
below it in the file's .eh_frame_hdr search table (every function the
compiler emitted unwind information for, stripped or not).  The key is
(file, function start); the name shown is the one the tools gave (perf's
first, without arguments), or file@0xstart when neither resolved it.

Kernel time: our profile has no kernel frames.  With --timer kernel (what
perf_agree.py records with) our counters also sample in the kernel where
allowed, and such a sample's signal is delivered on the way back to user
space, so time in a system call or a page fault is charged to the
user-space instruction that entered the kernel (the libc wrapper, the
faulting store).  perf's kernel samples are charged the same way, to the
first user-space frame of their call chain (recorded with -g), so both
tools are compared on the same CPU time; samples with no user frame at
all (the kernel's exec and exit work) are dropped.  (User mode only, our
default, a period that ends in the kernel is weighed into the thread's
next user-mode sample instead, wherever that lands.)  `--kernel drop`
compares user-space samples only instead (perf's kernel samples dropped,
the rest renormalized; ours cannot drop its share).
"""
import bisect
import os
import re
import struct
import subprocess

PT_LOAD = 1
PT_GNU_EH_FRAME = 0x6474E550

_elf_cache = {}


class Elf:
    """The PT_LOAD headers and .eh_frame_hdr function starts of a file."""

    def __init__(self, path):
        self.loads = []  # (offset, filesz, vaddr)
        self.starts = []  # sorted function start vaddrs
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            return
        if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
            return  # 64-bit little-endian only (x86-64, arm64)
        phoff, = struct.unpack_from("<Q", data, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
        hdr = None
        for i in range(phnum):
            p_type, _flags, off, vaddr, _paddr, filesz = struct.unpack_from(
                "<IIQQQQ", data, phoff + i * phentsize)
            if p_type == PT_LOAD:
                self.loads.append((off, filesz, vaddr))
            elif p_type == PT_GNU_EH_FRAME:
                hdr = (off, vaddr)
        if hdr:
            self.starts = _eh_frame_hdr_starts(data, *hdr)

    def vaddr(self, offset):
        for off, filesz, vaddr in self.loads:
            if off <= offset < off + filesz:
                return offset - off + vaddr
        return None

    def function(self, vaddr):
        i = bisect.bisect_right(self.starts, vaddr)
        return self.starts[i - 1] if i else None


def _enc_size(enc):
    return {0x02: 2, 0x03: 4, 0x04: 8, 0x0A: 2, 0x0B: 4, 0x0C: 8}.get(
        enc & 0x0F)


def _eh_frame_hdr_starts(data, off, vaddr):
    """The binary search table of .eh_frame_hdr: (initial location, FDE)
    pairs sorted by location, normally DW_EH_PE_datarel|sdata4 (0x3b),
    relative to the section's own address."""
    version, ptr_enc, count_enc, table_enc = data[off:off + 4]
    if version != 1 or table_enc != 0x3B or count_enc not in (0x03, 0x0B):
        return []
    pos = off + 4 + (_enc_size(ptr_enc) or 0)
    count, = struct.unpack_from("<I" if count_enc == 0x03 else "<i", data, pos)
    pos += 4
    starts = [vaddr + struct.unpack_from("<i", data, pos + 8 * i)[0]
              for i in range(count)]
    starts.sort()
    return starts


def elf(path):
    if path not in _elf_cache:
        _elf_cache[path] = Elf(path)
    return _elf_cache[path]


def display_name(name):
    """A tool's symbol without version, clone suffix or argument list."""
    name = re.sub(r"@@?[A-Z][A-Z0-9_.]*$", "", name)
    name = re.sub(r" \[clone [^]]*\]", "", name)
    if name.endswith(")"):
        depth = 0
        for i in range(len(name) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(name[i], 0)
            if depth == 0:
                name = name[:i]
                break
    return name


def _unnamed(name):
    return (not name or name == "[unknown]" or name.startswith("0x")
            or re.search(r"\+0x[0-9a-f]+$", name) is not None)


def leaf_key(path, file_offset):
    """(file, function start) for a leaf at file_offset in path; the file
    offset itself when the file has no PT_LOAD or FDE for it."""
    e = elf(path)
    v = e.vaddr(file_offset)
    if v is None:
        return (path, "off", file_offset)
    start = e.function(v)
    if start is None:
        return (path, "va", v)
    return (path, "fn", start)


class Shares:
    """Self weight per key and the names the tool gave each key."""

    def __init__(self):
        self.weight = {}
        self.names = {}
        self.dropped = 0  # kernel weight (perf's)
        self.total = 0
        self.samples = 0  # user-space samples

    def add(self, key, name, w):
        self.weight[key] = self.weight.get(key, 0) + w
        if not _unnamed(name) and key not in self.names:
            self.names[key] = display_name(name)

    def shares(self):
        s = sum(self.weight.values())
        return {k: v / s for k, v in self.weight.items()} if s else {}


_MAP_RE = re.compile(
    r"^\s*(\d+): 0x([0-9a-f]+)/0x([0-9a-f]+)/0x([0-9a-f]+) (\S*)")
_LOC_RE = re.compile(r"^\s*(\d+): 0x([0-9a-f]+) M=(\d+) ?(.*)$")
_SAMPLE_RE = re.compile(r"^\s*(\d+)\s+(\d+): ([\d ]+)$")


def read_ours(pb_gz):
    """Shares of a profring-prof CPU profile, by `go tool pprof -raw`
    (cpu/nanoseconds, the profile's default sample value)."""
    out = subprocess.run(["go", "tool", "pprof", "-raw", pb_gz],
                         capture_output=True, text=True, check=True).stdout
    maps, locs, samples = {}, {}, []
    section = None
    for line in out.splitlines():
        if line in ("Samples:", "Locations", "Mappings"):
            section = line
            continue
        if section == "Samples:":
            m = _SAMPLE_RE.match(line)
            if m:
                samples.append((int(m.group(1)), int(m.group(2)),
                                int(m.group(3).split()[0])))
        elif section == "Locations":
            m = _LOC_RE.match(line)
            if m:
                name = re.sub(r" \S+:\d+ s=\d+.*$| :0 s=0.*$", "", m.group(4))
                locs[int(m.group(1))] = (int(m.group(2), 16),
                                         int(m.group(3)), name)
        elif section == "Mappings":
            m = _MAP_RE.match(line)
            if m:
                maps[int(m.group(1))] = (int(m.group(2), 16),
                                         int(m.group(4), 16), m.group(5))
    sh = Shares()
    for count, value, loc in samples:
        sh.total += value
        sh.samples += count
        addr, mid, name = locs.get(loc, (0, 0, "?"))
        if mid in maps and os.path.isabs(maps[mid][2]):
            start, offset, path = maps[mid]
            sh.add(leaf_key(path, addr - start + offset), name, value)
        elif name.startswith("[profring"):
            sh.add(("profring", "name", name), name, value)
        else:
            sh.add(("?", "name", name), name, value)
    return sh


_PHEAD_RE = re.compile(r"^\s*(\d+)/(\d+)\s+(\d+)\s*$")
_PFRAME_RE = re.compile(r"^\s+([0-9a-f]+) (.*) \((.*)\)$")
KERNEL_DSO = "[kernel.kallsyms]"


def _perf_key(addr, sym, dso):
    # perf script prints a frame's address in its file (map_ip: the
    # address less the mapping's start plus its file offset), as our
    # profile's Mapping table gives it.
    if os.path.isabs(dso):
        return leaf_key(dso, addr)
    return (dso, "name", sym)


def read_perf(perf_data, kernel="charge"):
    """Shares of a perf.data file recorded with -g: every cpu-clock
    sample's period, by the first frame of its call chain.  A sample taken
    in the kernel is charged to the first user-space frame of its chain
    (the instruction that entered the kernel: a system call's wrapper, a
    faulting load) with kernel="charge", which is where our counter's
    signal lands for the same time with --timer kernel; it is dropped
    with kernel="drop", and
    always when its chain has no user frame (exec, exit)."""
    out = subprocess.run(
        ["perf", "script", "-i", perf_data, "-F", "pid,tid,period,ip,sym,dso"],
        capture_output=True, text=True, check=True).stdout
    sh = Shares()
    sh.charged = 0  # kernel weight charged to a user frame
    period, frames = None, []

    def flush():
        if period is None or not frames:
            return
        sh.total += period
        user = [f for f in frames if f[2] != KERNEL_DSO]
        if frames[0][2] == KERNEL_DSO:
            if kernel != "charge" or not user:
                sh.dropped += period
                return
            sh.charged += period
        sh.samples += 1
        sh.add(_perf_key(*user[0]), user[0][1], period)

    for line in out.splitlines():
        m = _PHEAD_RE.match(line)
        if m:
            flush()
            period, frames = int(m.group(3)), []
            continue
        m = _PFRAME_RE.match(line)
        if m and period is not None:
            frames.append((int(m.group(1), 16), m.group(2).strip(),
                           m.group(3)))
    flush()
    return sh


def key_name(key, *shares):
    for s in shares:
        if key in s.names:
            return s.names[key]
    path, kind, val = key
    if kind == "name":
        return display_name(val)
    return "%s@0x%x" % (os.path.basename(path), val)


#!/usr/bin/env python3
"""What the bytes of the static binary are, read from GNU ld link maps (-Wl,-Map).

`./build.sh bytes` runs it: the shipped binary's map gives what each origin takes (our files
after link-time optimization, BearSSL, musl, the C start-up files, the ELF headers and padding),
BearSSL and musl split by part; a second link of the same line without LTO (its objects named
after their sources) gives our bytes by file. With the cross-built maps of `./build.sh dist` it
adds one line per architecture. It prints Markdown; --update FILE rewrites the part of FILE
between <!-- bytes:begin --> and <!-- bytes:end --> with it. It reads maps and sizes only: it
never builds, and it never fails because of a figure.
"""
import argparse
import os
import re
import sys

# Output sections by what their bytes are; anything else allocated counts as data.
CODE = (".init", ".text", ".fini", ".plt", ".iplt")
CONST = (".rodata", ".eh_frame", ".eh_frame_hdr", ".ARM.exidx", ".ARM.extab", ".gcc_except_table")
NOBITS = (".bss", ".tbss")
UNALLOC = (".comment", ".debug", ".stab", ".note.gnu.build-id", ".symtab", ".strtab", ".shstrtab",
           ".gnu.attributes", ".ARM.attributes")

# BearSSL's object files by the part of TLS they serve (the first pattern that matches).
BEARSSL_PARTS = [
    ("TLS engine and handshake", r"^(ssl_|prf)"),
    ("X.509 chain check, PEM and key decoding", r"^(x509_|skey_|pemdec|asn1|encode_)"),
    ("elliptic curves (ECDHE, ECDSA)", r"^(ec_|ecdsa_)"),
    ("big integers (RSA, generic curves)", r"^(rsa_|i15_|i31_|i32_|i62_)"),
    ("AES-GCM", r"^(aes_|ghash_)"),
    ("ChaCha20-Poly1305", r"^(chacha20_|poly1305_)"),
    ("hashes and HMAC", r"^(sha|md5|multihash|hmac\.|hmac_ct)"),
    ("randomness", r"^(hmac_drbg|sysrng|aesctr_drbg)"),
    ("byte codecs, constant-time helpers", r"^(enc|dec|ccopy|settings)"),
]
# musl's object files by part (Debian's libc.a names its members after their source files).
MUSL_PARTS = [
    ("DNS resolver (getaddrinfo: hosts, resolv.conf, queries)",
     r"^(getaddrinfo|freeaddrinfo|gai_strerror|lookup_|res_|dns_|dn_|resolvconf|__fopen_rb_ca|"
     r"mbstowcs|mbsrtowcs|internal|inet_aton|if_nametoindex|serv|h_errno|herror|__dns)"),
    ("printf and stdio (FILE, locks, float formatting)",
     r"^(v?f?printf|v?s?n?printf|f(puts|putc|write|flush|open|close|read|gets|getc|error|seek|tell|"
     r"dopen)|getc|putc|puts|__stdio_|__stdout_|__to(read|write)|__overflow|__uflow|__fdopen|"
     r"__fmodeflags|std(out|err|in)\.|ofl|__lockfile|__fclose_ca|frexpl|__fpclassifyl|__signbitl|"
     r"wcrtomb|wctomb)"),
    ("malloc", r"^(malloc|free|realloc|calloc|lite_malloc|aligned_alloc|memalign|donate|"
               r"expand_heap|__malloc|mmap|munmap|mremap|madvise)"),
    ("threads and locks", r"^(pthread_|clone|__timedwait|__wait|__lock|__syscall_cp|__unmapself|"
                          r"__set_thread_area|default_attr|vmlock|block|__tls_get_addr|"
                          r"sigfillset|restore)"),
    ("start-up and exit", r"^(__libc_start_main|__init_tls|exit|_Exit|__stack_chk_fail|"
                          r"__errno_location|__environ|libc\.|__libc|crt|atexit|__funcs_on_exit)"),
    ("error messages (strerror)", r"^(strerror|__lctrans)"),
    ("strings, numbers, sort", r"^(str|mem|stp|tolower|toupper|is[a-z]+\.|atoi|atol|strto|intscan|"
                               r"shgetc|qsort|explicit_bzero|bsearch)"),
]
OTHER_MUSL = "system call wrappers, time, sockets"


def parse_map(path):
    """Kept input sections of a link map: (output section, input section, size, file)."""
    out = []
    osec = None
    pending = None          # an input section name on a line of its own
    started = False
    for raw in open(path, errors="replace"):
        line = raw.rstrip("\n")
        if not started:
            started = line.startswith("Linker script and memory map")
            continue
        if line.startswith("OUTPUT(") or line.startswith("LOAD ") or not line.strip():
            pending = None
            continue
        m = re.match(r"^(\.[^\s]+|[A-Za-z_][^\s]*)(\s+0x([0-9a-f]+)\s+0x([0-9a-f]+))?\s*$", line)
        if m and not line.startswith(" "):
            osec = m.group(1)
            pending = None
            continue
        m = re.match(r"^ (\S+)\s*$", line)
        if m and not m.group(1).startswith("*("):
            pending = m.group(1)
            continue
        m = re.match(r"^ (\S+)?\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(\S.*)$", line)
        if m and (m.group(1) or pending) and osec:
            isec = m.group(1) or pending
            pending = None
            if isec.startswith("*(") or isec == "*fill*":
                continue
            out.append((osec, isec, int(m.group(3), 16), m.group(4).strip()))
            continue
        m = re.match(r"^ \*fill\*\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)", line)
        if m and osec:
            out.append((osec, "*fill*", int(m.group(2), 16), "*fill*"))
        pending = None
    return out


def kind(osec):
    if osec.startswith(NOBITS):
        return "bss"
    if osec.startswith(UNALLOC):
        return None
    if osec in CODE or osec.startswith(".text"):
        return "code"
    if osec in CONST or osec.startswith(".rodata"):
        return "const"
    return "data"


def origin(f):
    """(origin, member or file) of an input file of the map."""
    b = os.path.basename(f)
    m = re.search(r"([^/(]+)\.a\(([^)]+)\)$", f)
    if m:
        lib, member = m.group(1), m.group(2)
        if lib == "libbearssl":
            return "BearSSL", member
        if lib == "libc":
            return "musl libc", member
        return "libgcc and C start-up files", "%s(%s)" % (lib, member)
    if f == "*fill*":
        return "alignment padding", ""
    if re.match(r"^(S|r|g)?crt[1in]\.o$|^crt(begin|end)[ST]?\.o$", b):
        return "libgcc and C start-up files", b
    if f.startswith("linker stubs") or f == "":
        return "linker", f
    m = re.search(r"-(\w+)\.o$", b)
    if m and not b.startswith("cc"):
        return "noderecover", m.group(1) + ".c"
    return "noderecover", "(after LTO)"


def tally(sections):
    """{origin: {kind: bytes}}, {(origin, member): bytes of code+const+data}."""
    by_origin, by_member = {}, {}
    for osec, _, size, f in sections:
        k = kind(osec)
        if k is None or size == 0:
            continue
        o, member = origin(f)
        by_origin.setdefault(o, {}).setdefault(k, 0)
        by_origin[o][k] += size
        if k != "bss":
            by_member[(o, member)] = by_member.get((o, member), 0) + size
    return by_origin, by_member


def file_backed(d):
    return d.get("code", 0) + d.get("const", 0) + d.get("data", 0)


def parts(by_member, org, table, other):
    got = {}
    for (o, member), n in by_member.items():
        if o != org:
            continue
        name = member.split(".")[0] + "."
        part = next((p for p, rx in table if re.search(rx, name)), other)
        got.setdefault(part, []).append((n, member))
    rows = []
    for part, members in got.items():
        members.sort(reverse=True)
        rows.append((sum(n for n, _ in members), part, members))
    rows.sort(reverse=True)
    return rows


def kib(n):
    return "%.1f KiB" % (n / 1024.0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary")
    ap.add_argument("map")
    ap.add_argument("--nolto-map", help="map of the same link without -flto, objects named by source")
    ap.add_argument("--arch", action="append", default=[], metavar="NAME=BINARY:MAP",
                    help="another architecture's binary and map, for the per-architecture line")
    ap.add_argument("--update", metavar="FILE", help="rewrite FILE between the bytes markers")
    a = ap.parse_args()

    secs = parse_map(a.map)
    by_origin, by_member = tally(secs)
    size = os.path.getsize(a.binary)
    counted = sum(file_backed(d) for d in by_origin.values())
    L = []
    L.append("`%s`: %d bytes (%s), stripped. Made by `./build.sh bytes` (`bench/bytes.py`) from the "
             "link map of that build and of the same link without LTO." % (a.binary, size, kib(size)))
    L.append("")
    L.append("| origin | code | constants | data | bytes in the file | share |")
    L.append("|---|---:|---:|---:|---:|---:|")
    order = ["noderecover", "BearSSL", "musl libc", "libgcc and C start-up files", "linker",
             "alignment padding"]
    rows = sorted(by_origin.items(), key=lambda kv: (order.index(kv[0]) if kv[0] in order else 99))
    for o, d in rows:
        n = file_backed(d)
        if n == 0:
            continue
        label = "noderecover (our files, after LTO)" if o == "noderecover" else o
        if o == "alignment padding":
            label = "alignment padding between sections"
        L.append("| %s | %d | %d | %d | %d | %.1f%% |" % (label, d.get("code", 0), d.get("const", 0),
                                                        d.get("data", 0), n, 100.0 * n / size))
    rest = size - counted
    L.append("| ELF and program headers, section table, segment padding | | | | %d | %.1f%% |"
             % (rest, 100.0 * rest / size))
    L.append("| **total** | | | | **%d** | 100%% |" % size)
    bss = sum(d.get("bss", 0) for d in by_origin.values())
    L.append("")
    L.append("Zero-initialised memory (bss, no bytes in the file): %d bytes." % bss)
    L.append("")

    if a.nolto_map and os.path.exists(a.nolto_map):
        nsecs = parse_map(a.nolto_map)
        _, nmember = tally(nsecs)
        files = sorted(((n, m) for (o, m), n in nmember.items() if o == "noderecover"), reverse=True)
        ours_lto = file_backed(by_origin.get("noderecover", {}))
        ours = sum(n for n, _ in files)
        L.append("Our files, from the same link without LTO (%d bytes; LTO takes them to %d, %+d):"
                 % (ours, ours_lto, ours_lto - ours))
        L.append("")
        L.append("| file | bytes |")
        L.append("|---|---:|")
        for n, m in files:
            L.append("| %s | %d |" % (m, n))
        L.append("")

    for org, table, other in (("BearSSL", BEARSSL_PARTS, "other"),
                              ("musl libc", MUSL_PARTS, OTHER_MUSL)):
        prow = parts(by_member, org, table, other)
        L.append("%s by part (%d bytes):" % (org, sum(r[0] for r in prow)))
        L.append("")
        L.append("| part | bytes | largest objects |")
        L.append("|---|---:|---|")
        for n, part, members in prow:
            L.append("| %s | %d | %s |" % (part, n, ", ".join("%s %d" % (m.rsplit(".", 1)[0], k)
                                                              for k, m in members[:5])))
        L.append("")

    if a.arch:
        L.append("Per architecture (`./build.sh dist`, the same compile line):")
        L.append("")
        L.append("| architecture | bytes in the file | ours | BearSSL | musl | headers, padding, other |")
        L.append("|---|---:|---:|---:|---:|---:|")
        for spec in a.arch:
            name, _, rest_ = spec.partition("=")
            binp, _, mapp = rest_.partition(":")
            if not (os.path.exists(binp) and os.path.exists(mapp)):
                continue
            bo, _ = tally(parse_map(mapp))
            sz = os.path.getsize(binp)
            ours = file_backed(bo.get("noderecover", {}))
            bear = file_backed(bo.get("BearSSL", {}))
            musl = file_backed(bo.get("musl libc", {}))
            L.append("| %s | %d (%s) | %d | %d | %d | %d |" % (name, sz, kib(sz), ours, bear, musl,
                                                             sz - ours - bear - musl))
        L.append("")

    text = "\n".join(L)
    # the report goes into BENCHMARKS.md, which must not carry this machine's paths
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    text = text.replace(root, "")
    print(text)
    if a.update:
        doc = open(a.update).read()
        begin, end = "<!-- bytes:begin -->", "<!-- bytes:end -->"
        i, j = doc.find(begin), doc.find(end)
        if i < 0 or j < i:
            print("bytes.py: no %s ... %s in %s; not updated" % (begin, end, a.update), file=sys.stderr)
            return 1
        open(a.update, "w").write(doc[:i + len(begin)] + "\n" + text + "\n" + doc[j:])
    return 0


if __name__ == "__main__":
    sys.exit(main())

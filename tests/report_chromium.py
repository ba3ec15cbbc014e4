#!/usr/bin/env python3
"""A `fusedtune report` opened in headless Chromium (Debian's `chromium`): it must render with no
console message at all and its screenshot must not be blank.

usage: report_chromium.py FUSEDTUNE TEST_REPORT WORKDIR

The report's Content-Security-Policy blocks every load and script, and Chromium logs each blocked
one to the console, so "no console message" also says the page needed nothing outside itself.
Before the report, a page that logs an error on purpose checks that console messages are seen
at all here (else a silent Chromium would pass anything).

Exit 0 on success, 1 on failure, 77 (CTest's skip) when no Chromium is installed, except under CI
(CI set in the environment), where a missing Chromium is a failure: .ci/run installs it.
Standard library only: the PNG is decoded with zlib.
"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

SKIP = 77
WIDTH, HEIGHT = 1100, 1800


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def find_chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


def screenshot(chromium, page, png, profile):
    """Renders page into png; returns Chromium's stderr (its log, console messages included)."""
    cmd = [chromium, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--no-default-browser-check",
           "--disable-extensions", "--disable-background-networking", "--disable-sync", "--hide-scrollbars",
           "--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0",
           "--window-size=%d,%d" % (WIDTH, HEIGHT), "--screenshot=" + png, "file://" + os.path.abspath(page)]
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    except subprocess.TimeoutExpired:
        fail("chromium did not finish within 60 s on " + page)
    err = p.stderr.decode("utf-8", "replace")
    if p.returncode != 0 or not os.path.exists(png):
        fail("chromium exited %d without a screenshot of %s:\n%s" % (p.returncode, page, err[-3000:]))
    return err


def console_lines(log):
    return [line for line in log.splitlines() if ":CONSOLE" in line]


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def decode_png(path):
    """(width, height, channels, rows of bytes) of an 8-bit RGB / RGBA / grey PNG."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail(path + " is not a PNG")
    pos, idat, ihdr = 8, [], None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
        pos += 12 + n
    w, h, depth, color, _, _, interlace = ihdr
    channels = {0: 1, 2: 3, 4: 2, 6: 4}.get(color)
    if depth != 8 or channels is None or interlace:
        fail("%s: PNG depth %d colour type %d interlace %d not handled" % (path, depth, color, interlace))
    raw = zlib.decompress(b"".join(idat))
    stride = w * channels
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            line[i] = (line[i] + (0, a, b, (a + b) // 2, paeth(a, b, c))[f]) & 0xFF
        rows.append(line)
        prev = line
    return w, h, channels, rows


def check_not_blank(path):
    w, h, ch, rows = decode_png(path)
    if (w, h) != (WIDTH, HEIGHT):
        fail("%s is %dx%d, not the %dx%d window" % (path, w, h, WIDTH, HEIGHT))
    n = inked = 0
    total = total_sq = 0.0
    colours = set()
    for y in range(0, h, 3):
        line = rows[y]
        for x in range(0, w, 3):
            px = tuple(line[x * ch:x * ch + min(ch, 3)])
            grey = sum(px) / len(px)
            n += 1
            total += grey
            total_sq += grey * grey
            inked += grey < 200
            if len(colours) < 4096:
                colours.add(px)
    mean = total / n
    var = total_sq / n - mean * mean
    print("screenshot %s: %dx%d, %.2f %% inked, variance %.0f, %d colours" % (path, w, h, 100.0 * inked / n, var,
                                                                          len(colours)))
    if inked < n * 0.01 or var < 100 or len(colours) < 16:
        fail("%s looks blank (%.2f %% inked, variance %.0f, %d colours)" % (path, 100.0 * inked / n, var, len(colours)))


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    fusedtune, test_report, work = sys.argv[1:]
    chromium = find_chromium()
    if not chromium:
        if os.environ.get("CI"):
            fail("chromium is not installed: CI needs it (.ci/run installs Debian's chromium package)")
        print("SKIP: chromium is not installed (apt-get install chromium)", file=sys.stderr)
        return SKIP
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    profile = tempfile.mkdtemp(prefix="chromium-profile-", dir=work)

    probe = os.path.join(work, "probe.html")
    with open(probe, "w") as f:
        f.write("<!DOCTYPE html><html><head><meta charset=\"utf-8\"></head><body><p>probe</p>"
                "<script>console.error(\"fusedtune-probe\")</script></body></html>\n")
    log = screenshot(chromium, probe, os.path.join(work, "probe.png"), profile)
    if not any("fusedtune-probe" in line for line in console_lines(log)):
        fail("this chromium does not log console messages to stderr, so none can be checked:\n" + log[-3000:])

    fixture, db, html = (os.path.join(work, n) for n in ("fixture.json", "r.db", "report.html"))
    for cmd in ([test_report, "--fixture", fixture], [fusedtune, "--db", db, "import", fixture],
                [fusedtune, "--db", db, "report", "-o", html]):
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if p.returncode != 0:
            fail("%s exited %d:\n%s" % (" ".join(cmd), p.returncode, p.stdout.decode("utf-8", "replace")))
    png = os.path.join(work, "report.png")
    log = screenshot(chromium, html, png, profile)
    msgs = console_lines(log)
    if msgs:
        fail("the report logged %d console message(s):\n%s" % (len(msgs), "\n".join(msgs[:20])))
    check_not_blank(png)
    shutil.rmtree(profile, ignore_errors=True)
    print("report renders in %s with no console message" % chromium)
    return 0


if __name__ == "__main__":
    sys.exit(main())

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


# Measures the rendered page: each chart against its column, each pair of texts in a chart.
# The report's policy blocks scripts, so this runs on a copy without that meta element.
LAYOUT_SCRIPT = """<script>
(function () {
  var out = [], body = document.body.getBoundingClientRect();
  function box(e) { var b = e.getBoundingClientRect(); return b.width > 0 && b.height > 0 ? b : null; }
  function name(e) { return (e.textContent || "").replace(/\\s+/g, " ").slice(0, 60); }
  var charts = document.querySelectorAll("svg.chart");
  charts.forEach(function (svg, i) {
    var kind = svg.getAttribute("data-chart"), b = svg.getBoundingClientRect();
    var col = svg.parentElement.getBoundingClientRect();
    if (b.width > col.width + 0.5 || b.right > body.right + 0.5)
      out.push("WIDE chart " + i + " (" + kind + "): " + b.width.toFixed(0) + " px in a column of " + col.width.toFixed(0));
    var texts = [];
    svg.querySelectorAll("text").forEach(function (t) { var r = box(t); if (r) texts.push([t, r]); });
    for (var a = 0; a < texts.length; a++)
      for (var c = a + 1; c < texts.length; c++) {
        var p = texts[a][1], q = texts[c][1];
        var w = Math.min(p.right, q.right) - Math.max(p.left, q.left);
        var h = Math.min(p.bottom, q.bottom) - Math.max(p.top, q.top);
        if (w > 1 && h > 1)
          out.push("OVERLAP chart " + i + " (" + kind + "): '" + name(texts[a][0]) + "' and '" + name(texts[c][0]) + "'");
      }
  });
  document.querySelectorAll("table").forEach(function (t, i) {
    var b = t.getBoundingClientRect();
    if (b.right > body.right + 0.5) out.push("WIDE table " + i + " (" + name(t.querySelector("tr")) + "): right edge at " + b.right.toFixed(0) + " px, column ends at " + body.right.toFixed(0));
  });
  var pre = document.createElement("pre");
  pre.id = "layout-result";
  pre.textContent = "charts " + charts.length + "\\n" + out.join("\\n");
  document.body.appendChild(pre);
})();
</script>"""


def check_layout(chromium, html, work, profile):
    """Every chart within its column, no two texts of a chart over each other, no table past the
    column: measured by Chromium on a copy of the page that may run the measuring script."""
    text = open(html, encoding="utf-8").read()
    start = text.find('<meta http-equiv="Content-Security-Policy"')
    if start < 0:
        fail("the report has no Content-Security-Policy meta element to take out for the layout check")
    text = text[:start] + text[text.index(">", start) + 1:]
    text = text.replace("</body>", LAYOUT_SCRIPT + "</body>")
    page = os.path.join(work, "layout.html")
    with open(page, "w", encoding="utf-8") as f:
        f.write(text)
    cmd = [chromium, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--no-default-browser-check",
           "--disable-extensions", "--disable-background-networking", "--disable-sync", "--hide-scrollbars",
           "--user-data-dir=" + profile, "--window-size=%d,%d" % (WIDTH, HEIGHT), "--dump-dom",
           "file://" + os.path.abspath(page)]
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    except subprocess.TimeoutExpired:
        fail("chromium did not finish the layout check within 60 s")
    dom = p.stdout.decode("utf-8", "replace")
    at = dom.find('<pre id="layout-result">')
    if at < 0:
        fail("the layout script left no result:\n" + p.stderr.decode("utf-8", "replace")[-2000:])
    result = dom[at + len('<pre id="layout-result">'):dom.index("</pre>", at)]
    lines = [html_unescape(line) for line in result.split("\n")]
    n_charts = int(lines[0].split()[1])
    problems = [line for line in lines[1:] if line]
    print("layout: %d charts measured, %d problem(s)" % (n_charts, len(problems)))
    if n_charts == 0:
        fail("the layout check found no chart")
    if problems:
        fail("the report's layout in Chromium:\n" + "\n".join(problems[:40]))


def html_unescape(s):
    import html as _html
    return _html.unescape(s)


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
    check_layout(chromium, html, work, profile)
    shutil.rmtree(profile, ignore_errors=True)
    print("report renders in %s with no console message" % chromium)
    return 0


if __name__ == "__main__":
    sys.exit(main())

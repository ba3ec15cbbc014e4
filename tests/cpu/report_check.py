#!/usr/bin/env python3
"""Checks a `fusedtune report` HTML file (tests/cpu/test_report.c runs it; standard library only).

Exit 0 when the page is well-formed (every element closed, in order), refers to nothing outside
itself (no script, no external URL, no font), and every chart's data-marks equals the elements of
class "mark" it holds. Prints one line per problem section and per chart for the caller to
compare with what it stored:
  section <device>|<shape>|<epilogue>
  chart <device>|<shape>|<mode or ->|<kind> <marks>
Exit 1 with the reasons on stderr otherwise.
"""
import re
import sys
from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
# Elements and attributes that would load or run something.
FORBIDDEN_TAGS = {"script", "link", "iframe", "img", "object", "embed", "frame", "audio", "video", "source", "base",
                  "image", "use", "foreignobject"}
URL_ATTRS = {"href", "src", "srcset", "action", "xlink:href", "poster", "data", "formaction", "background"}


class Checker(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack = []  # (tag, attrs, line)
        self.errors = []
        self.sections = []
        self.charts = []  # [context, kind, declared, counted]
        self.chart = None

    def where(self):
        return "line %d" % self.getpos()[0]

    def context(self):
        problem = mode = None
        for tag, attrs, _ in self.stack:
            if tag == "section" and "problem" in attrs.get("class", "").split():
                problem = attrs
            if tag == "section" and "mode" in attrs.get("class", "").split():
                mode = attrs.get("data-math")
        if not problem:
            return None
        return "%s|%s|%s" % (problem.get("data-device"), problem.get("data-shape"), mode or "-")

    def check_attrs(self, tag, attrs):
        if tag in FORBIDDEN_TAGS:
            self.errors.append("%s: <%s> loads or runs something" % (self.where(), tag))
        for name, value in attrs.items():
            value = value or ""
            if name.startswith("on"):
                self.errors.append("%s: event handler %s" % (self.where(), name))
            if name in URL_ATTRS and not value.startswith("#"):
                self.errors.append("%s: %s=%r refers outside the page" % (self.where(), name, value))
            if "url(" in value.replace(" ", "").lower() and "url(#" not in value.replace(" ", "").lower():
                self.errors.append("%s: url() in %s" % (self.where(), name))

    def count_mark(self, attrs):
        if "mark" in (attrs.get("class") or "").split():
            if self.chart is None:
                self.errors.append("%s: a mark outside a chart" % self.where())
            else:
                self.chart[3] += 1

    def handle_starttag(self, tag, attrs_list):
        attrs = dict(attrs_list)
        if len(attrs) != len(attrs_list):
            self.errors.append("%s: <%s> repeats an attribute" % (self.where(), tag))
        self.check_attrs(tag, attrs)
        self.count_mark(attrs)
        if tag == "svg" and "data-chart" in attrs:
            if self.chart is not None:
                self.errors.append("%s: a chart inside a chart" % self.where())
            self.chart = [self.context(), attrs["data-chart"], int(attrs.get("data-marks", "-1")), 0]
        if tag == "section" and "problem" in (attrs.get("class") or "").split():
            self.sections.append("%s|%s|%s" % (attrs.get("data-device"), attrs.get("data-shape"),
                                               attrs.get("data-epilogue")))
        if tag not in VOID:
            self.stack.append((tag, attrs, self.getpos()[0]))

    def handle_startendtag(self, tag, attrs_list):
        attrs = dict(attrs_list)
        self.check_attrs(tag, attrs)
        self.count_mark(attrs)

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack:
            self.errors.append("%s: </%s> closes nothing" % (self.where(), tag))
            return
        top, attrs, line = self.stack.pop()
        if top != tag:
            self.errors.append("%s: </%s> closes <%s> of line %d" % (self.where(), tag, top, line))
        if tag == "svg" and self.chart is not None and "data-chart" in attrs:
            self.charts.append(self.chart)
            self.chart = None


def main():
    if len(sys.argv) != 2:
        print("usage: report_check.py FILE.html", file=sys.stderr)
        return 2
    raw = open(sys.argv[1], "rb").read()
    errors = []
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        errors.append("not UTF-8: %s" % e)
        text = raw.decode("utf-8", "replace")
    if not text.startswith("<!DOCTYPE html>"):
        errors.append("no <!DOCTYPE html> first")
    for pattern in (r"https?:", r"@import", r"@font-face", r"<script", r"\bsrc\s*=", r"//[a-z0-9.-]+\.[a-z]{2,}/"):
        m = re.search(pattern, text, re.I)
        if m:
            errors.append("external reference %r at offset %d: %r" % (pattern, m.start(), text[m.start():m.start() + 60]))
    c = Checker()
    c.feed(text)
    c.close()
    errors += c.errors
    for tag, _, line in c.stack:
        errors.append("<%s> of line %d is never closed" % (tag, line))
    for ctx, kind, declared, counted in c.charts:
        if ctx is None:
            errors.append("chart %s outside a problem section" % kind)
        if declared != counted:
            errors.append("chart %s in %s declares %d marks and holds %d" % (kind, ctx, declared, counted))
    if errors:
        for e in errors[:40]:
            print(e, file=sys.stderr)
        return 1
    for s in c.sections:
        print("section " + s)
    for ctx, kind, declared, counted in c.charts:
        print("chart %s|%s %d" % (ctx, kind, counted))
    return 0


if __name__ == "__main__":
    sys.exit(main())

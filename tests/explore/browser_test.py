#!/usr/bin/env python3
"""texc explore's pages in a real browser (docs/explore.md, "What the tests check").

For every examples/*.tex: `texc explore` writes the page; the page must hold no network URL
(static check), pass `tidy -q -e` without errors or warnings (when tidy is installed), and load
in headless Chromium with every network request made to fail, with no console message, no
resource fetched, every pass of the pipeline given a section and every SVG something drawn
(the page's own script checks itself and writes the results on <body>; --dump-dom shows them).
A canary page with a network image proves that a fetch would be seen. The fuse pass of gelu
must show the removed nodes in its line diff. One page is screenshotted at desktop and phone
width and the PNGs checked to be non-blank (and, when a reference exists, compared with it
with a tolerance).

Exit status: 0 pass, 1 fail, 77 skip (no chromium: CTest's SKIP_RETURN_CODE), with the reason.
Standard library only.
"""
import argparse
import concurrent.futures
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib

SKIP = 77

# Chromium with every network request failing: a proxy that refuses connections, and no host
# name resolving. A page that fetched anything would log a console error and count a resource.
NO_NETWORK = ["--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND"]


def chromium_command(browser, extra):
    return [browser, "--headless=new", "--disable-gpu", "--no-sandbox", "--no-first-run",
            "--disable-extensions", "--disable-sync", "--disable-background-networking",
            "--enable-logging=stderr", "--v=0"] + NO_NETWORK + extra


def find_browser():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def run_browser(browser, args, timeout=60):
    profile = tempfile.mkdtemp(prefix="texc-explore-chromium-")
    try:
        p = subprocess.run(chromium_command(browser, ["--user-data-dir=" + profile] + args),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
        return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def console_lines(stderr):
    return [l for l in stderr.splitlines() if "CONSOLE" in l]


def body_attributes(dom):
    m = re.search(r"<body([^>]*)>", dom)
    if not m:
        return {}
    return dict(re.findall(r'([\w-]+)="([^"]*)"', m.group(1)))


# What "no external URL" means here: the text `http://` or `https://` appears nowhere in the page
# (stricter than needed: texc strips even the SVG namespace attributes), and every src=, href=,
# url(...) and @import refers to the page itself (#fragment) or is absent.
def network_references(html):
    problems = []
    for scheme in ("http://", "https://", "ftp://", "//cdn"):
        if scheme in html:
            problems.append("contains " + scheme)
    for m in re.finditer(r'\b(src|href|action|poster|srcset)\s*=\s*"([^"]*)"', html):
        if not m.group(2).startswith("#"):
            problems.append('%s="%s"' % (m.group(1), m.group(2)))
    for m in re.finditer(r"url\(([^)]*)\)", html):
        if not m.group(1).strip("'\" ").startswith("#"):
            problems.append("url(%s)" % m.group(1))
    if "@import" in html:
        problems.append("@import")
    if re.search(r"<(link|iframe|object|embed|img)\b", html):
        problems.append("an element that loads a resource")
    return problems


def decode_png(path):
    """(width, height, channels, rows): rows are bytes objects after unfiltering."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, width = 8, [], 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", chunk)
            if depth != 8 or color not in (2, 6) or interlace:
                raise ValueError("unsupported PNG (depth %d, colour type %d)" % (depth, color))
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat.append(chunk)
        elif kind == b"IEND":
            break
    raw = zlib.decompress(b"".join(idat))
    stride = width * channels
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 1:
            for i in range(channels, stride):
                line[i] = (line[i] + line[i - channels]) & 255
        elif f == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif f == 3:
            for i in range(stride):
                left = line[i - channels] if i >= channels else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 255
        elif f == 4:
            for i in range(stride):
                a = line[i - channels] if i >= channels else 0
                b = prev[i]
                c = prev[i - channels] if i >= channels else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, channels, rows


def image_summary(path, grid=(24, 32)):
    """Distinct colours and the share of non-white pixels (every 2nd pixel of every 2nd row), and
    the mean grey level of each cell of a grid, for comparisons."""
    w, h, ch, rows = decode_png(path)
    colours, nonwhite, seen = set(), 0, 0
    gy, gx = grid
    cells = [[0.0, 0] for _ in range(gx * gy)]
    for y in range(0, h, 2):
        row = rows[y]
        for x in range(0, w, 2):
            r, g, b = row[x * ch], row[x * ch + 1], row[x * ch + 2]
            colours.add((r, g, b))
            seen += 1
            if r < 245 or g < 245 or b < 245:
                nonwhite += 1
            cell = cells[(y * gy // h) * gx + x * gx // w]
            cell[0] += (r + g + b) / 765.0
            cell[1] += 1
    return {"width": w, "height": h, "colours": len(colours), "nonwhite": nonwhite / max(seen, 1),
            "grid": [s / n if n else 1.0 for s, n in cells]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--texc", required=True)
    ap.add_argument("--examples", required=True)
    ap.add_argument("--screenshots", help="also copy the screenshots here (docs/images)")
    ap.add_argument("--reference", help="reference screenshots to compare with (docs/images)")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    start = time.time()

    browser = find_browser()
    if not browser:
        print("SKIP: no chromium on PATH (Debian: apt-get install chromium; scripts/setup.sh installs it)")
        return SKIP

    failures = []

    def fail(msg):
        failures.append(msg)
        print("FAIL: " + msg)

    work = tempfile.mkdtemp(prefix="texc-explore-test-")
    env = dict(os.environ)
    try:
        passes = subprocess.run([args.texc, "passes"], stdout=subprocess.PIPE, check=True).stdout.decode()
        pipeline = [l.split()[1] for l in passes.splitlines() if re.match(r"\s*\d+\.\s", l)]
        examples = sorted(f for f in os.listdir(args.examples) if f.endswith(".tex"))
        pages = {}
        for ex in examples:
            out = os.path.join(work, ex[:-4] + ".html")
            t0 = time.time()
            p = subprocess.run([args.texc, "explore", os.path.join(args.examples, ex), "-o", out],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
            if p.returncode != 0 or not os.path.exists(out):
                fail("%s: texc explore exited %d: %s" % (ex, p.returncode, p.stderr.decode()[-500:]))
                continue
            html = open(out, encoding="utf-8").read()
            pages[ex] = out
            print("page %-22s %8d bytes, made in %.2f s" % (ex, len(html), time.time() - t0))
            problems = network_references(html)
            if problems:
                fail("%s: network references: %s" % (ex, ", ".join(problems[:5])))

        tidy = shutil.which("tidy")
        if not tidy:
            print("tidy: SKIP (not installed; Debian: apt-get install tidy)")
        else:
            for ex, out in pages.items():
                p = subprocess.run([tidy, "-q", "-e", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                if p.returncode != 0:
                    fail("%s: tidy -q -e exited %d:\n%s" % (ex, p.returncode, p.stderr.decode()[:2000]))
            print("tidy -q -e: %d pages checked" % len(pages))

        # The canary: a page that fetches must be caught by the same checks.
        canary = os.path.join(work, "canary.html")
        with open(canary, "w") as f:
            f.write('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>canary</title></head>'
                    '<body><img alt="" src="http://texc-canary.invalid/x.png">'
                    "<script>window.addEventListener('load',function(){document.body.setAttribute("
                    "'data-resources',String(performance.getEntriesByType('resource').length));});</script></body></html>")

        def load(path):
            return run_browser(browser, ["--dump-dom", "file://" + path])

        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            futures = {pool.submit(load, path): ex for ex, path in list(pages.items()) + [("canary", canary)]}
            results = {futures[f]: f.result() for f in concurrent.futures.as_completed(futures)}

        rc, dom, err = results.pop("canary")
        seen = body_attributes(dom).get("data-resources", "0") != "0" or console_lines(err)
        if not seen:
            fail("the canary page's network image went unnoticed: the no-network check proves nothing")
        else:
            print("canary: a network fetch is caught (%s)" % (console_lines(err)[0].strip()[:120] if console_lines(err)
                                                             else "resource entries"))

        for ex in sorted(results):
            rc, dom, err = results[ex]
            attrs = body_attributes(dom)
            msgs = console_lines(err)
            checks = []
            if rc != 0:
                fail("%s: chromium exited %d" % (ex, rc))
            if attrs.get("data-selfcheck") != "done":
                fail("%s: the page's script did not finish (body: %s)" % (ex, attrs))
                continue
            if msgs:
                fail("%s: console messages: %s" % (ex, " | ".join(msgs[:3])))
            checks.append("no console message")
            if attrs.get("data-errors") != "0":
                fail("%s: %s script errors" % (ex, attrs.get("data-errors")))
            if attrs.get("data-resources") != "0":
                fail("%s: %s resources fetched" % (ex, attrs.get("data-resources")))
            checks.append("0 resources fetched")
            if attrs.get("data-passes") != str(len(pipeline)) or attrs.get("data-pipeline-rows") != str(len(pipeline)):
                fail("%s: %s pass sections and %s pipeline rows for %d passes" % (
                    ex, attrs.get("data-passes"), attrs.get("data-pipeline-rows"), len(pipeline)))
            for name in pipeline:
                if 'data-pass="%s"' % name not in dom:
                    fail("%s: no section for pass %s" % (ex, name))
            checks.append("%s pass sections" % attrs.get("data-passes"))
            if attrs.get("data-svgs-empty"):
                fail("%s: SVGs with nothing drawn: %s" % (ex, attrs["data-svgs-empty"]))
            if int(attrs.get("data-svgs", "0")) < 4:
                fail("%s: only %s SVGs" % (ex, attrs.get("data-svgs")))
            checks.append("%s SVGs drawn" % attrs.get("data-svgs"))
            for section in ("source", "pipeline", "graph", "memory", "roofline", "code"):
                if 'id="%s"' % section not in dom:
                    fail("%s: no %s section" % (ex, section))
            if ex == "gelu.tex":
                m = re.search(r'data-pass="fuse".*?</details>', dom, re.S)
                removed = re.findall(r'<span class="del">[^<]*- (%[\w.]+)\[', m.group(0)) if m else []
                for node in ("%h", "%y.1", "%y.7"):
                    if node not in removed:
                        fail("gelu.tex: the fuse diff does not show %s removed (removed: %s)" % (node, removed))
                checks.append("fuse diff removes %d nodes" % len(set(removed)))
            print("browser %-19s %s" % (ex, ", ".join(checks)))

        # Screenshots of one page at desktop and phone width.
        shot_page = pages.get("conv_pool.tex") or next(iter(pages.values()), None)
        for label, size in (("desktop", "1280,900"), ("phone", "375,800")):
            if not shot_page:
                break
            png = os.path.join(work, "explore-%s.png" % label)
            rc, _, err = run_browser(browser, ["--screenshot=" + png, "--window-size=" + size,
                                               "--hide-scrollbars", "file://" + shot_page])
            if rc != 0 or not os.path.exists(png):
                fail("screenshot %s: chromium exited %d" % (label, rc))
                continue
            s = image_summary(png)
            verdict = "%dx%d, %d colours, %.1f %% not white" % (s["width"], s["height"], s["colours"], 100 * s["nonwhite"])
            if s["colours"] < 16 or s["nonwhite"] < 0.03:
                fail("screenshot %s is blank: %s" % (label, verdict))
            if args.reference:
                ref = os.path.join(args.reference, "explore-%s.png" % label)
                if os.path.exists(ref):
                    r = image_summary(ref)
                    diff = sum(abs(a - b) for a, b in zip(s["grid"], r["grid"])) / len(s["grid"])
                    verdict += ", differs from the reference by %.3f (tolerance 0.15)" % diff
                    if (r["width"], r["height"]) != (s["width"], s["height"]) or diff > 0.15:
                        fail("screenshot %s does not match %s: %s" % (label, ref, verdict))
            print("screenshot %-8s %s" % (label, verdict))
            if args.screenshots:
                os.makedirs(args.screenshots, exist_ok=True)
                shutil.copy(png, os.path.join(args.screenshots, "explore-%s.png" % label))
        # For the docs: the figures of the gelu page (its graphs, memory plan and roofline) alone,
        # and its fuse pass opened.
        if args.screenshots and "gelu.tex" in pages:
            html = open(pages["gelu.tex"], encoding="utf-8").read()
            head = html[:html.index("<main>") + len("<main>")]
            views = {
                "figures": html[html.index('<section id="graph">'):html.index('<section id="code">')],
                "fuse": re.search(r'<details class="pass changed" id="pass-\d+" data-pass="fuse">.*?</details>\n', html, re.S)
                .group(0).replace("<details ", "<details open ", 1),
            }
            for name, part in views.items():
                view = os.path.join(work, "view-%s.html" % name)
                with open(view, "w", encoding="utf-8") as f:
                    f.write(head + part + "</main></body></html>\n")
                png = os.path.join(args.screenshots, "explore-%s.png" % name)
                run_browser(browser, ["--screenshot=" + png, "--window-size=1100,%d" % (1900 if name == "figures" else 1150),
                                      "--hide-scrollbars", "file://" + view])
                print("screenshot %-8s %s" % (name, png))
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print("%s: %d pages in %.1f s" % ("FAILED" if failures else "passed", len(examples), time.time() - start))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

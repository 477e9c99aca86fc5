#!/usr/bin/env python3
"""Runs every shell example of README.md and docs/*.md and fails when one fails (issue 19).

Run by scripts/test.sh after the binary is built:

    python3 tests/readme/check_readme.py [--bin target/debug/webdedup] [--list] [--only FILE:LINE] [PAGE.md...]

It also fails on a link of these pages to a file of the repository, or a heading,
that does not exist (pages move; links must follow).

What is run. Every fenced block labelled `sh`, `bash` or `console`, read from the
README at test time (so examples other people add are run too):

* `sh` / `bash`: the block's commands (`\\`-continued lines joined; comments are
  comments) run in order in one bash, `set -eo pipefail`: each must exit 0.
* `console`: lines starting with `$ ` are commands; the lines after a command, up
  to the next `$ `, are what it prints (stdout and stderr): each must appear in the
  output, in that order (other lines may come between), and `...` in an expected
  line matches any text (timings, speeds). A README figure that comes from a run
  belongs in such a block, so it is checked.
* An unlabelled block that starts with `$ ` is an error (label it `console`): an
  example cannot leave the check by losing its label.
* `<!-- not run: REASON -->` on the line before a fence skips that block; the
  reason is required and printed. Keep these rare: for what needs another machine
  or minutes of building (installing the release binary, Slurm, Spark, Ray), or is
  this check's own caller.

Where. Each block runs in a fresh directory under target/readme-check/, holding the
files the README's examples name (see FIXTURES: made from the shipped samples,
sample/web3-mini and sample/sqlite-recrawl, never ../shared) and `sample/` (a link
to the repository's). `webdedup` is the binary under test; `cargo run --release --
ARGS` runs it with ARGS (the build itself is the test suite's business). The block
runs in a network and mount namespace of its own (`unshare`; as root, or with user
namespaces): loopback is up, every 10.0.0.x address is local, /tmp is a private
tmpfs. So examples run as written (servers on 10.0.0.1:1234, Redis on
127.0.0.1:6379, outputs in /tmp) and never meet another test's ports or files.

Services. For every `redis://` / `valkey://` URL in a block, a redis-server is
started at its address before the block (several hosts: a Cluster of them). A
`webdedup server` or `redis-server` command of the block runs in the background;
the block goes on once its address accepts connections, and every such process
gets SIGTERM (then is waited for) when the block ends.
"""
import argparse
import gzip
import html
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 600


# ---- Reading the README -------------------------------------------------------------

class Block:
    def __init__(self, line, lang, lines, skip):
        self.name = ""  # the file's path relative to the repository, set by main
        self.line = line  # 1-based line of the opening fence
        self.lang = lang
        self.lines = lines
        self.skip = skip  # None, or the reason given in <!-- not run: ... -->

    def text(self):
        return "\n".join(self.lines)


FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([\w+-]*)")
NOT_RUN = re.compile(r"<!--\s*not run:\s*(.*?)\s*-->")


def blocks(text):
    """Every fenced block, with its label and the skip marker before it."""
    out = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang = m.group(1), m.group(2), m.group(3).lower()
        prev = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        marker = NOT_RUN.search(prev)
        body = []
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence[:3]):
            line = lines[j]
            body.append(line[len(indent):] if line.startswith(indent) else line.lstrip())
            j += 1
        out.append(Block(i + 1, lang, body, marker.group(1) if marker else None))
        i = j + 1
    return out


def commands(lines):
    """Shell commands of a block: continuation lines joined, comments and blank
    lines left out (bash would ignore them too)."""
    cmds, cur = [], ""
    for line in lines:
        if not cur and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.rstrip().endswith("\\"):
            cur += line.rstrip()[:-1] + " "
            continue
        cmds.append((cur + line).strip())
        cur = ""
    if cur:
        cmds.append(cur.strip())
    return cmds


def console_steps(lines):
    """(command, expected lines) of a console block."""
    steps = []
    for line in lines:
        if line.startswith("$ "):
            steps.append([line[2:], []])
        elif steps and steps[-1][0].rstrip().endswith("\\") and not steps[-1][1]:
            steps[-1][0] = steps[-1][0].rstrip()[:-1] + " " + line.strip()
        elif steps:
            steps[-1][1].append(line)
        elif line.strip():
            raise ValueError(f"output before the first `$ ` command: {line!r}")
    return steps


def matches(expected, actual):
    """Whether expected lines appear in actual lines in order; `...` matches any text."""
    pats = [re.compile("^" + ".*".join(re.escape(p) for p in e.rstrip().split("...")) + "$")
            for e in expected if e.strip()]
    got = [a.rstrip() for a in actual]
    k = 0
    for g in got:
        if k < len(pats) and pats[k].match(g):
            k += 1
    return k == len(pats), (pats[k].pattern if k < len(pats) else None)


# ---- Fixtures: the files the examples name, made from the shipped samples ------------

def run(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def vertical_docs(path):
    """(attributes, words) of each document of a gzip vertical."""
    doc, words = None, []
    for line in gzip.decompress(path.read_bytes()).decode("utf-8", "replace").split("\n"):
        if line.startswith("<doc "):
            doc, words = dict(re.findall(r'(\w+)="([^"]*)"', line)), []
        elif line.startswith("</doc>") and doc is not None:
            yield {k: html.unescape(v) for k, v in doc.items()}, words
            doc = None
        elif doc is not None and line and not line.startswith("<"):
            words.append(line.split("\t")[0])


def make_fixtures(fix, binary):
    """FIXTURES: what the README's examples read, by the names they use."""
    web3 = ROOT / "sample" / "web3-mini"
    crawls = sorted(p for p in web3.iterdir() if p.is_dir())
    warcs = ROOT / "sample" / "sqlite-recrawl"
    fix.mkdir(parents=True)
    wd = lambda *a, **kw: run([str(binary), *a], cwd=fix, **kw)
    # crawl/: the three sample crawls as flat zstd verticals; CC-2015-18/, CC-2015-35/
    # and crawl2/: crawls as directories (incremental runs).
    (fix / "crawl").mkdir()
    for c in crawls:
        plain = gzip.decompress((c / "part-00000.vert.gz").read_bytes())
        run(["zstd", "-q", "-o", str(fix / "crawl" / f"{c.name}.vert.zst")], input=plain)
    for name, src in (("CC-2015-18", crawls[0]), ("CC-2015-35", crawls[1]), ("crawl2", crawls[2])):
        shutil.copytree(src, fix / name / src.name)
    # Web archives: the WARC sample; CDX (11 fields) and CDXJ indexes of it; the dates
    # of the first crawl (an earlier `cdx dates` output).
    for w in sorted(warcs.glob("crawl-*.warc.gz")):
        shutil.copy(w, fix / w.name)
        n = w.name.split(".")[0]
        wd("warc", "index", "--format", "cdx11", w.name, "-o", f"{n}.cdx", stderr=subprocess.DEVNULL)
        wd("warc", "index", w.name, "-o", f"{n}.cdxj", stderr=subprocess.DEVNULL)
    wd("cdx", "dates", "crawl-1.cdx", "-o", "old.dates", stderr=subprocess.DEVNULL)
    # Documents as JSON Lines, lines and files (simhash, similar).
    docs = [d for c in crawls for d in vertical_docs(c / "part-00000.vert.gz")]
    with open(fix / "pages.jsonl", "w") as f:
        for a, w in docs:
            f.write(json.dumps({"url": a.get("url", ""), "body": " ".join(w)}, ensure_ascii=False) + "\n")
    (fix / "titles.txt").write_text("".join(a.get("title", "") + "\n" for a, _ in docs))
    (fix / "docs").mkdir()
    for i, (a, w) in enumerate(docs[:40]):
        (fix / "docs" / f"doc-{i:03}.txt").write_text(" ".join(w) + "\n")
    (fix / "new-batch").mkdir()
    for part in (0, 1):
        with open(fix / "new-batch" / f"part-{part}.jsonl", "w") as f:
            for a, w in docs[part::2][:100]:
                f.write(json.dumps({"url": a.get("url", ""), "text": " ".join(w)}, ensure_ascii=False) + "\n")
    # dolma/: the JSON Lines sample (dolma's layout); rp.jsonl.zst: RedPajama's
    # (`raw_content`, `meta.url`).
    shutil.copytree(ROOT / "sample" / "web3-mini-jsonl", fix / "dolma")
    para = lambda w: "\n".join(" ".join(w[i:i + 12]) for i in range(0, len(w), 12))
    rp = "".join(json.dumps({"raw_content": para(w), "meta": {"url": a.get("url", "")}},
                            ensure_ascii=False) + "\n" for a, w in docs)
    run(["zstd", "-q", "-o", str(fix / "rp.jsonl.zst")], input=rp.encode())
    cjk = (ROOT / "crates" / "simhash" / "tests" / "data" / "cjk.jsonl").read_text().splitlines()
    (fix / "ja.jsonl").write_text("".join(l + "\n" for l in cjk if '"ja' in l))
    (fix / "zh.jsonl").write_text("".join(l + "\n" for l in cjk if '"ja' not in l))
    wd("simhash", *[f"crawl/{c.name}.vert.zst" for c in crawls], "-o", "fps.tsv", stderr=subprocess.DEVNULL)
    # Wikilinks rows (source, target, anchor, position, left and right context), each
    # link twice across the two files, some with other context.
    (fix / "links").mkdir()
    for part in (0, 1):
        with open(fix / "links" / f"links-{part}.tsv", "w") as f:
            for i, (a, w) in enumerate(docs[:150]):
                if len(w) < 12:
                    continue
                ctx = w[3:9] if part == 0 or i % 3 else w[4:10]
                f.write("\t".join([a.get("url", ""), f"https://example.org/{i % 60}", " ".join(w[:3]),
                                   str(i), " ".join(ctx), " ".join(w[9:12])]) + "\n")
    # Servers files (hash servers on two machines, ten, one leaving), a URL filter.
    (fix / "servers").write_text("10.0.0.1:1234\n10.0.0.2:1234\n")
    (fix / "servers10").write_text("".join(f"10.0.0.{i}:1234\n" for i in range(1, 11)))
    (fix / "leaving").write_text("10.0.0.2:1234\n")
    (fix / "blocked.txt").write_text("# documents never to keep\ndomain:example.com\n")


# ---- Running a block --------------------------------------------------------------

REDIS_URL = re.compile(r"\b(?:redis|valkey)://([\w.,:-]+)")
LISTEN = re.compile(r"--listen\s+(\S+)")


def redis_services(text):
    """redis-server commands (and cluster creation) for the URLs a block names."""
    out, seen = [], set()
    for m in REDIS_URL.finditer(text):
        hosts = [h if ":" in h else h + ":6379" for h in m.group(1).split(",") if h]
        if tuple(hosts) in seen:
            continue
        seen.add(tuple(hosts))
        cluster = len(hosts) > 1
        for h in hosts:
            host, port = h.rsplit(":", 1)
            d = f"$RC/redis-{host}-{port}"
            extra = (f"--cluster-enabled yes --cluster-config-file nodes.conf --cluster-announce-ip {host}"
                     if cluster else "")
            # Protected mode off: the namespace is private, and 10.0.0.x is not loopback.
            out.append(f"mkdir -p {d}; redis-server --bind {host} --port {port} --save '' "
                       f"--appendonly no --protected-mode no --dir {d} {extra} >{d}.log 2>&1 &")
            out.append(f"wait_for {host} {port}")
        if cluster:
            out.append(f"timeout 60 redis-cli --cluster create {' '.join(hosts)} --cluster-replicas 0 "
                       f"--cluster-yes >$RC/cluster.log 2>&1 || {{ cat $RC/cluster.log; exit 1; }}")
            h0, p0 = hosts[0].rsplit(":", 1)
            out.append(f"for i in $(seq 200); do redis-cli -h {h0} -p {p0} cluster info | grep -q cluster_state:ok && break; sleep 0.1; done")
    return out


PRELUDE = r"""
set -eo pipefail
ip link set lo up
ip route add local 10.0.0.0/24 dev lo
exec 9</tmp
mount -t tmpfs tmpfs /tmp
# A checkout under /tmp (a clone made there) stays reachable: its top directory
# in the old /tmp is bound into the private one.
if [ -n "$KEEP" ]; then mkdir -p "/tmp/$KEEP"; mount --no-canonicalize --bind "/proc/self/fd/9/$KEEP" "/tmp/$KEEP"; fi
exec 9<&-
export PATH="$RC/bin:$PATH"
cargo() {
  if [ "$1 $2 $3" = "run --release --" ]; then shift 3; webdedup "$@"; return; fi
  echo "README check: only 'cargo run --release -- ARGS' is run (as webdedup ARGS)" >&2; return 2
}
wait_for() {
  for i in $(seq 600); do (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null && return 0; sleep 0.1; done
  echo "README check: nothing listens at $1:$2 after 60 s" >&2; return 1
}
stop_background() {
  local pids; pids=$(jobs -p)
  [ -n "$pids" ] && kill -TERM $pids 2>/dev/null
  wait 2>/dev/null || true
}
trap stop_background EXIT
"""


def background(cmd):
    """A long-running server command: started in the background, waited for."""
    words = cmd.split()
    if words[:2] == ["webdedup", "server"]:
        m = LISTEN.search(cmd)
        host, port = m.group(1).rsplit(":", 1) if m else ("127.0.0.1", "1234")
    elif words[:1] == ["redis-server"]:
        port = re.search(r"--port\s+(\d+)", cmd)
        host = re.search(r"--bind\s+(\S+)", cmd)
        host, port = (host.group(1) if host else "127.0.0.1"), (port.group(1) if port else "6379")
    else:
        return None
    # The braces and newline keep a trailing `# comment` from swallowing the `&`.
    # `exec`: the job is the server itself (SIGTERM reaches it: it saves and stops).
    return f"{{ exec {cmd}\n}} &\nwait_for {host.strip('[]')} {port}"


def script(block, outdir):
    lines = [PRELUDE, *redis_services(block.text()), 'cd "$BLOCK"']
    if block.lang == "console":
        steps = console_steps(block.lines)
        for n, (cmd, _) in enumerate(steps):
            lines.append(f"echo {shlex.quote('$ ' + cmd)}")
            lines.append(f"{{ {cmd}\n}} > {outdir}/{n} 2>&1 || {{ s=$?; cat {outdir}/{n}; exit $s; }}")
        return "\n".join(lines) + "\n", steps
    for cmd in commands(block.lines):
        lines.append(f"echo {shlex.quote('$ ' + cmd)}")
        lines.append(background(cmd) or cmd)
    return "\n".join(lines) + "\n", None


def kept_under_tmp():
    """The directory right under /tmp that holds the checkout, if it is there: the
    block's private /tmp would hide it otherwise."""
    tmp = Path("/tmp").resolve()
    return ROOT.relative_to(tmp).parts[0] if ROOT.is_relative_to(tmp) else ""


def run_block(block, work, fix, binary):
    tag = re.sub(r"[^\w.-]", "_", block.name)
    d = work / f"{tag}-{block.line}"
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(fix, d, symlinks=True)
    (d / "sample").symlink_to(ROOT / "sample")
    rc = work / f"{tag}-{block.line}.run"
    shutil.rmtree(rc, ignore_errors=True)
    (rc / "bin").mkdir(parents=True)
    (rc / "bin" / "webdedup").symlink_to(binary)
    outdir = rc / "out"
    outdir.mkdir()
    text, steps = script(block, outdir)
    (rc / "script.sh").write_text(text)
    ns = ["unshare", "--net", "--mount", "--propagation", "private", "--fork"]
    if os.geteuid() != 0:
        ns.insert(1, "--map-root-user")
    env = dict(os.environ, BLOCK=str(d), RC=str(rc), KEEP=kept_under_tmp())
    started = time.time()
    p = subprocess.Popen([*ns, "bash", str(rc / "script.sh")], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, start_new_session=True)
    try:
        log, _ = p.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        log, _ = p.communicate()
        return False, f"timed out after {TIMEOUT} s\n" + log.decode("utf-8", "replace")[-4000:], 0
    finally:
        # Anything the block left behind (its group only: processes this check started).
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    secs = time.time() - started
    log = log.decode("utf-8", "replace")
    if p.returncode != 0:
        return False, f"exit status {p.returncode}\n" + log[-4000:], secs
    for n, (cmd, expected) in enumerate(steps or []):
        actual = (outdir / str(n)).read_text(errors="replace").split("\n")
        ok, missing = matches(expected, actual)
        if not ok:
            return False, (f"$ {cmd}\nprinted:\n" + "\n".join(actual[-40:]) +
                           f"\nbut the README expects a line matching: {missing}"), secs
    shutil.rmtree(d, ignore_errors=True)
    shutil.rmtree(rc, ignore_errors=True)
    return True, "", secs


HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(text):
    """GitHub's anchors of a Markdown text's headings (fenced blocks left out)."""
    out, fenced = set(), False
    for line in text.split("\n"):
        if FENCE.match(line):
            fenced = not fenced
            continue
        m = HEADING.match(line)
        if m and not fenced:
            a = re.sub(r"[^\w\- ]", "", m.group(2).lower()).replace(" ", "-")
            n, base = 1, a
            while a in out:
                a, n = f"{base}-{n}", n + 1
            out.add(a)
    return out


def broken_links(path):
    """Links of a page to files of the repository or anchors that do not exist."""
    text = path.read_text()
    bad = []
    for n, line in enumerate(text.split("\n"), 1):
        for target in LINK.findall(line):
            if re.match(r"^[a-z]+:", target):
                continue  # https:, mailto:
            file, _, anchor = target.partition("#")
            dest = (path.parent / file).resolve() if file else path
            if not dest.exists():
                bad.append(f"{path.relative_to(ROOT)}:{n}: link to a missing file: {target}")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest.read_text()):
                bad.append(f"{path.relative_to(ROOT)}:{n}: link to a missing heading: {target}")
    return bad


def main():
    # A stopped check still stops the block it runs (the `finally` of run_block).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("pages", nargs="*", help="Markdown files (default: README.md and docs/*.md)")
    ap.add_argument("--bin", default=str(ROOT / "target" / "debug" / "webdedup"))
    ap.add_argument("--work", default=str(ROOT / "target" / "readme-check"))
    ap.add_argument("--list", action="store_true", help="list the blocks and what would be done")
    ap.add_argument("--only", action="append", help="run only the block at FILE:LINE (or LINE)")
    args = ap.parse_args()
    pages = [Path(p).resolve() for p in args.pages] or [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    all_blocks = []
    for page in pages:
        for b in blocks(page.read_text()):
            b.name = str(page.relative_to(ROOT))
            all_blocks.append(b)
    links = [l for page in pages for l in broken_links(page)]
    for l in links:
        print(l, file=sys.stderr)
    bad = [b for b in all_blocks if not b.lang and b.lines and b.lines[0].startswith("$ ")]
    for b in bad:
        print(f"{b.name}:{b.line}: an unlabelled block of commands: label it ```console", file=sys.stderr)
    runnable = [b for b in all_blocks if b.lang in ("sh", "bash", "shell", "console")]
    skipped = [b for b in runnable if b.skip is not None]
    empty_reason = [b for b in skipped if not b.skip.strip()]
    for b in empty_reason:
        print(f"{b.name}:{b.line}: <!-- not run: --> needs a reason", file=sys.stderr)
    only = set(args.only or [])
    todo = [b for b in runnable if b.skip is None
            and (not only or f"{b.name}:{b.line}" in only or str(b.line) in only)]
    if args.list:
        for b in runnable:
            what = f"not run: {b.skip}" if b.skip is not None else f"{len(commands(b.lines)) if b.lang != 'console' else len(console_steps(b.lines))} commands"
            print(f"{b.name}:{b.line}: {b.lang}: {what}")
        return 0
    binary = Path(args.bin).resolve()
    if not binary.exists():
        print(f"README check: {binary} is missing (cargo build -p webdedup)", file=sys.stderr)
        return 2
    for tool in ("unshare", "ip", "redis-server", "redis-cli", "zstd"):
        if shutil.which(tool) is None and not Path("/usr/sbin", tool).exists():
            print(f"README check: `{tool}` is missing (scripts/deps.sh installs it)", file=sys.stderr)
            return 2
    work = Path(args.work).resolve()
    shutil.rmtree(work, ignore_errors=True)
    fix = work / "fixtures"
    print(f"README check: making the example files from the shipped samples", flush=True)
    make_fixtures(fix, binary)
    failed = len(bad) + len(empty_reason) + len(links)
    for b in todo:
        ok, why, secs = run_block(b, work, fix, binary)
        first = b.lines[0] if b.lines else ""
        print(f"{b.name}:{b.line}: {b.lang}: {'ok' if ok else 'FAILED'} ({secs:.1f} s)  {first[:70]}", flush=True)
        if not ok:
            failed += 1
            print("    " + why.replace("\n", "\n    "), flush=True)
    for b in skipped:
        print(f"{b.name}:{b.line}: {b.lang}: not run: {b.skip}")
    print(f"README check: {len(pages)} pages, {len(todo)} blocks run, {failed} failed, "
          f"{len(skipped)} not run (reasons above)")
    if failed == 0:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

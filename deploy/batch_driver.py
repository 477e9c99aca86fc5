"""The driver of webdedup batch mode that deploy/ray and deploy/spark share: their
command line, its checks and the order of the phases. A phase is a list of calls of
the Python module's batch functions, one per task; an engine supplies only how a
phase's calls run in parallel (`run_phase`). A call is plain data (the function's
name and its arguments), so it reaches a worker without this module.
"""

# The MinHash settings passed through to the webdedup module (as the command line's
# --shingles, --hashes, ...); see `webdedup minhash --help`.
MINHASH_SETTINGS = ("shingles", "hashes", "bands", "rows", "verify")

NO_MINHASH_STORE = "--minhash takes no --store (not supported yet)"


def add_arguments(p):
    """The options of both drivers (each adds its engine's own)."""
    p.add_argument("--input", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("--tasks", type=int, default=8, help="tasks of each phase (default 8)")
    p.add_argument("--partitions", type=int, default=64, help="hash partitions (default 64)")
    p.add_argument("--store", help="key store of earlier runs; this run's keys are published into it")
    p.add_argument("--dd", action="store_true", help="also write .dd lists")
    g = p.add_argument_group("MinHash mode (the decisions of `webdedup minhash`; defaults as its)")
    g.add_argument("--minhash", action="store_true", help="near-duplicate documents by MinHash LSH")
    g.add_argument("--shingles", help="auto:N (the default), words:N or chars:N")
    g.add_argument("--hashes", type=int, help="signature values")
    g.add_argument("--bands", type=int, help="LSH bands")
    g.add_argument("--rows", type=int, help="signature values per band")
    g.add_argument("--verify", type=float, help="drop only at estimated Jaccard >= J (0: off)")


def minhash_settings(p, a):
    """The MinHash settings given (None without --minhash)."""
    given = {k: getattr(a, k) for k in MINHASH_SETTINGS if getattr(a, k) is not None}
    if not a.minhash:
        if given:
            p.error("--%s applies with --minhash" % next(iter(given)))
        return None
    if a.store:
        p.error(NO_MINHASH_STORE)
    return given


def run(run_phase, inp, work, out, tasks, store=None, dd=False, partitions=64, minhash=None):
    """Runs every phase: `run_phase(calls)` runs one phase's calls, each
    `(name, args, kwargs)` meaning `getattr(webdedup, name)(*args, **kwargs)`, and
    returns once all are done. minhash: None (exact mode), or the MinHash settings
    as a dict (may be empty: the defaults). Returns the store's key count after
    publishing into `store`, else None."""
    common = dict(partitions=partitions)
    if minhash is not None:
        if store:
            raise ValueError(NO_MINHASH_STORE)
        common.update(minhash, minhash=True)
    every = range(tasks)
    run_phase([("batch_hash", (inp, work, i, tasks), common) for i in every])
    if minhash is not None:
        # The order of the Slurm script's: bands on every task, then one pick.
        run_phase([("batch_resolve", (inp, work, i, tasks, "bands"), common) for i in every])
        run_phase([("batch_resolve", (inp, work, 0, tasks, "pick"), common)])
    else:
        # Only exact mode's resolve reads a store.
        resolve = dict(common, store=store)
        for stage in ("url-title", "docs", "paras"):
            run_phase([("batch_resolve", (inp, work, i, tasks, stage), resolve) for i in every])
    run_phase([("batch_filter", (inp, work, out, i, tasks), dict(common, dd=dd)) for i in every])
    if not store:
        return None
    import webdedup

    return webdedup.batch_publish(inp, work, tasks, store, **common)

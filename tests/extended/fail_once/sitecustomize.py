"""Fault injection for tests/extended/ray_local.sh, loaded by every Python process
that has this directory on PYTHONPATH: with WEBDEDUP_FAIL_ONCE=PATH set, the first
`webdedup.batch_hash` call of all processes (the one that creates PATH) raises, as a
task that hits a transient error would. The others run as usual."""

import os

_marker = os.environ.get("WEBDEDUP_FAIL_ONCE")
if _marker:
    try:
        import webdedup
    except ImportError:  # an interpreter without the module (Ray's own helpers)
        webdedup = None
    if webdedup is not None:
        _real = webdedup.batch_hash

        def _batch_hash(*args, **kwargs):
            try:
                os.close(os.open(_marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                return _real(*args, **kwargs)
            raise RuntimeError("injected failure of a batch_hash task")

        webdedup.batch_hash = _batch_hash

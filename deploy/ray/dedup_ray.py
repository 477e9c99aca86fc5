"""webdedup batch mode on Ray: every phase is a set of Ray tasks calling the Python
module (`import webdedup`) on their task index; `ray.get` on a phase's tasks is the
barrier before the next. Tasks are idempotent (retries are harmless); outputs equal
`webdedup dedup`'s. IN, WORK and OUT must be on storage every node sees.

    python deploy/ray/dedup_ray.py --input IN --work WORK --output OUT --tasks 64
"""

import argparse


def run(inp, work, out, tasks, store=None, dd=False, partitions=64):
    import ray

    @ray.remote(max_retries=3)
    def task(kind, i, stage=None):
        import webdedup

        if kind == "hash":
            return webdedup.batch_hash(inp, work, i, tasks, partitions=partitions)
        if kind == "resolve":
            return webdedup.batch_resolve(inp, work, i, tasks, stage, store=store, partitions=partitions)
        return webdedup.batch_filter(inp, work, out, i, tasks, dd=dd, partitions=partitions)

    ray.get([task.remote("hash", i) for i in range(tasks)])
    for stage in ("url-title", "docs", "paras"):
        ray.get([task.remote("resolve", i, stage) for i in range(tasks)])
    ray.get([task.remote("filter", i) for i in range(tasks)])
    if store:
        import webdedup

        webdedup.batch_publish(inp, work, tasks, store, partitions=partitions)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--input", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("--tasks", type=int, default=8)
    p.add_argument("--partitions", type=int, default=64)
    p.add_argument("--store")
    p.add_argument("--dd", action="store_true")
    a = p.parse_args()
    import ray

    ray.init()
    run(a.input, a.work, a.output, a.tasks, a.store, a.dd, a.partitions)


if __name__ == "__main__":
    main()

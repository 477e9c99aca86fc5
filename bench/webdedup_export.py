"""The documents a `webdedup minhash -d` run dropped, in the export layout the
quality study reads for peers (bench/rensa_minhash.py), so the study scores the
binary's own decisions beside its simulation of them.

    python3 bench/webdedup_export.py OUT_DIR EXPORT_DIR "NAME"

OUT_DIR is the run's output directory (its `*.dedup.dd` files, one line a
document, `status="K"` or `"D"`); files are taken in sorted order, as the study
takes its inputs. Writes EXPORT_DIR/ids.tsv, removed.tsv and name.txt.
"""

import glob
import os
import re
import sys


def main():
    src, out, name = sys.argv[1], sys.argv[2], sys.argv[3]
    os.makedirs(out, exist_ok=True)
    files = sorted(os.path.relpath(p, src) for p in glob.glob(os.path.join(src, "**", "*.dedup.dd"), recursive=True))
    ids, removed = [], []
    for rank, rel in enumerate(files):
        with open(os.path.join(src, rel), encoding="utf-8") as f:
            for index, line in enumerate(f):
                doc_id = re.search(r' id="([^"]*)"', line)
                status = re.search(r' status="(.)"', line)
                if status is None:
                    sys.exit(f"{rel}:{index + 1}: no status")
                ids.append((rank, index, doc_id.group(1) if doc_id else ""))
                if status.group(1) == "D":
                    removed.append((rank, index))
    with open(os.path.join(out, "ids.tsv"), "w") as f:
        f.writelines(f"{r}\t{i}\t{d}\n" for r, i, d in ids)
    with open(os.path.join(out, "removed.tsv"), "w") as f:
        f.writelines(f"{r}\t{i}\n" for r, i in removed)
    with open(os.path.join(out, "name.txt"), "w") as f:
        f.write(name)
    print(f"{name}: documents={len(ids)} removed={len(removed)}")


if __name__ == "__main__":
    main()

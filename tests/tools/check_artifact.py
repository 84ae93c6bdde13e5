# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fail when the built collection artifact carries test output, virtual environments, caches or sandbox state."""

import sys
import tarfile

FORBIDDEN_PARTS = (".venv", ".sandbox", "tests/output", "__pycache__", ".pytest_cache", ".hypothesis",
                   "tests/sandbox", "build/", ".git/")
REQUIRED = ("MANIFEST.json", "FILES.json", "meta/runtime.yml", "README.md")


def main(path):
    with tarfile.open(path) as artifact:
        names = artifact.getnames()
    offending = [name for name in names if any(part in name for part in FORBIDDEN_PARTS)]
    missing = [name for name in REQUIRED if name not in names]
    if offending or missing:
        print("artifact %s: unexpected files %s; missing %s" % (path, offending[:20], missing))
        return 1
    print("artifact %s: %d files, none of them test output, venv or cache" % (path, len(names)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

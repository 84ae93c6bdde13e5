# Copyright: Contributors to the eksops.nodegroup project
# Apache License 2.0 (see LICENSE)
"""Stand-in for the get-pip.py script that ansible-test downloads to bootstrap pip in its virtual environments.

ansible-test fetches get-pip.py from a host this project's machines cannot reach. `make sanity` copies this file
to the cache path ansible-test looks at first (~/.ansible/test/cache/get_pip_<version>.py). It bootstraps pip from
the interpreter's bundled wheel (ensurepip), then installs what ansible-test asked for from the package index.
"""

import ensurepip
import subprocess
import sys

# get-pip.py's own flags, which `pip install` does not know.
GET_PIP_ONLY_FLAGS = {"--no-setuptools", "--no-wheel"}


def main():
    ensurepip.bootstrap(upgrade=True)
    pip_args = [arg for arg in sys.argv[1:] if arg not in GET_PIP_ONLY_FLAGS]
    subprocess.check_call([sys.executable, "-m", "pip", "install"] + pip_args)


if __name__ == "__main__":
    main()

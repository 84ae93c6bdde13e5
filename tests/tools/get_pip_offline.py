# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stand-in for the get-pip.py script that ansible-test downloads to bootstrap pip in its virtual environments.

ansible-test fetches get-pip.py from a host this project's machines cannot reach. `make sanity` copies this file
to the cache path ansible-test looks at first (~/.ansible/test/cache/get_pip_<version>.py). It bootstraps pip from
the interpreter's bundled wheel (ensurepip), then installs what ansible-test asked for from the package index.
"""

import ensurepip
import os
import subprocess
import sys

# get-pip.py's own flags, which `pip install` does not know.
GET_PIP_ONLY_FLAGS = {"--no-setuptools", "--no-wheel"}


def main():
    # ensurepip sets PIP_CONFIG_FILE=/dev/null in os.environ and leaves it there; the install below must see the
    # machine's pip configuration (index, certificates), so it gets the environment as it was before.
    environment = dict(os.environ)
    ensurepip.bootstrap(upgrade=True)
    pip_args = [arg for arg in sys.argv[1:] if arg not in GET_PIP_ONLY_FLAGS]
    subprocess.check_call([sys.executable, "-m", "pip", "install"] + pip_args, env=environment)


if __name__ == "__main__":
    main()

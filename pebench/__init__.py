"""pebench: a reproducible benchmark of positional encodings in transformers."""

import os
import sys

# `python -m pebench` (and `-m pebench.<module>`) puts the working directory first on the import path, so a
# `pandas.py` in a downloaded results folder would run; Python says "-m" in argv[0] while it imports the package
if sys.argv[:1] == ["-m"] and not sys.flags.safe_path and sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]

from pebench.protocol import PROTOCOL  # noqa: E402 (after the import path is made safe)

#: releases of pebench under the current protocol: (minor, patch); a new protocol starts again at (0, 0)
RELEASE = (0, 0)

#: the package version: its major is the protocol version of the runs it makes (docs: protocol), so that
#: ``pebench 3.x`` names the protocol its results follow; rows keep the version that made them
__version__ = f"{PROTOCOL}.{RELEASE[0]}.{RELEASE[1]}"

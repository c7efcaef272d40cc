"""pebench: a reproducible benchmark of positional encodings in transformers."""

from pebench.protocol import PROTOCOL

#: releases of pebench under the current protocol: (minor, patch); a new protocol starts again at (0, 0)
RELEASE = (0, 0)

#: the package version: its major is the protocol version of the runs it makes (docs: protocol), so that
#: ``pebench 3.x`` names the protocol its results follow; rows keep the version that made them
__version__ = f"{PROTOCOL}.{RELEASE[0]}.{RELEASE[1]}"

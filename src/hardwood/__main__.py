"""``python -m hardwood ...``: the ``hardwood`` command line (see ``hardwood.cli``)."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())

"""``python -m framehook``: see framehook._cli."""

import sys

from framehook._cli import main

if __name__ == "__main__":
    sys.exit(main())

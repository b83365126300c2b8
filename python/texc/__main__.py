"""python -m texc ARGS...: the texc command line, run in this process by the module's compiler."""

import sys

from . import main

sys.exit(main())

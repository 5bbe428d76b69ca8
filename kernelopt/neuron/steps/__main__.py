"""``python -m kernelopt.neuron.steps STEP ...``: the entry point the driver runs."""

import sys

from kernelopt.neuron.steps.command import main

sys.exit(main())

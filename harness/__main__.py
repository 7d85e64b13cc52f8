import sys

from harness.train import main

sys.exit(main())

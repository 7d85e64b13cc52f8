import sys

from harness.run.process_exit import before_exit
from harness.train import main

status = main()
before_exit()  # the run is over: the exit skips the collector's pass over torch's objects (1-3 s)
sys.exit(status)

"""A program for `climio trace run` to stop: it writes its pid, then appends blocks to a file until
a signal ends it, saying "started" after its first writes.

SIGINT and SIGTERM get their default action (death by the signal, as a C program), not Python's
KeyboardInterrupt: what the test checks is climio's stop, not Python's traceback.

    python stops_writer.py DATA_FILE PID_FILE
"""

import os
import signal
import sys
import time

signal.signal(signal.SIGINT, signal.SIG_DFL)
signal.signal(signal.SIGTERM, signal.SIG_DFL)
data, pid_file = sys.argv[1], sys.argv[2]
with open(pid_file, "w") as fh:
    fh.write(str(os.getpid()))
fd = os.open(data, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
block = b"x" * 4096
for i in range(100_000):
    os.pwrite(fd, block, (i % 64) * len(block))
    if i == 10:
        print("started", flush=True)
    time.sleep(0.01)
os.close(fd)

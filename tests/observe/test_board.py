"""TensorBoard's writer thread failing on a full disk: the run reports it in one line, so the thread's
own traceback must not reach the console as well."""
from __future__ import annotations

import errno
import queue
import threading

from tensorboard.summary.writer.event_file_writer import _AsyncWriterThread

from harness.observe.board import Board


class _FullDisk:
    def write(self, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    def flush(self):
        raise OSError(errno.ENOSPC, "No space left on device")


def test_the_writer_threads_full_disk_error_prints_no_traceback(tmp_path, monkeypatch):
    seen: list[BaseException] = []  # what the hook before the board's gets: it prints the traceback
    monkeypatch.setattr(threading, "excepthook", lambda args: seen.append(args.exc_value))
    board = Board(tmp_path)
    try:
        q: queue.Queue = queue.Queue()
        thread = _AsyncWriterThread(q, _FullDisk(), flush_secs=0)
        thread.start()
        q.put(b"event")
        thread.join(10)
        assert isinstance(thread.exception, OSError)  # kept for the next write, where the board handles it
        assert seen == []
        other = threading.Thread(target=lambda: 1 / 0)  # every other thread's error still shows
        other.start()
        other.join()
        assert [type(e) for e in seen] == [ZeroDivisionError]
    finally:
        board.writer.close()

"""OpenCV, imported once for all of vidload and set to one thread.

OpenCV's own thread pool does not survive `fork`: once its worker threads have run in a process,
a forked child (a DataLoader worker) that touches the pool hangs in `pthread_cond_destroy`
(reproduced in this project's test suite: a worker stuck in `cv2.setNumThreads`). vidload
decodes one clip per worker process and needs no intra-op threads, so it sets OpenCV to one
thread when it is first imported, before any pool thread exists; forked workers then inherit a
pool with no threads to wait for. This is process-wide: a program that wants OpenCV's threads
in its main process can call `cv2.setNumThreads(n)` after importing vidload, at the price of
that hazard in forked workers.
"""

from __future__ import annotations

import cv2

cv2.setNumThreads(1)

__all__ = ["cv2"]

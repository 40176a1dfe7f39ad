"""One writer per run folder: an advisory ``fcntl.flock`` on ``RUN/train.lock`` for the whole run.

The lock file holds the holder's pid, so a refused second run can say who holds the folder. The
kernel drops a flock when its holder dies (even by SIGKILL), so a killed run's stale lock file is
simply taken over by the next one. The holder deletes the file when it is done; a process that
opened the file just before that deletion notices (the path no longer names the inode it locked)
and tries again, so two processes can never both believe they hold the lock.
"""
from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from pathlib import Path

from ..errors import SynthformerError

try:
    import fcntl
except ImportError:  # Windows: no advisory locks; runs are not protected there
    fcntl = None

LOCK_FILE = "train.lock"


class RunLockedError(SynthformerError):
    """Another live process is writing to this run folder."""


class RunLock:
    """``with RunLock(folder):`` -- exclusive, non-blocking; raises RunLockedError naming the holder's pid."""

    def __init__(self, folder: Path):
        self.path = Path(folder) / LOCK_FILE
        self.fd: int | None = None

    def acquire(self) -> "RunLock":
        if fcntl is None:
            return self
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.read(fd, 64).decode(errors="replace").strip() or "unknown"
                os.close(fd)
                raise RunLockedError(f"{self.path.parent} is in use by another run (pid {holder}, lock file "
                                     f"{self.path}); wait for it to end or choose another out") from None
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)  # the holder deleted the file as we opened it: lock the new one
        self.fd = fd
        try:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
            os.fsync(fd)
        except BaseException:  # a full disk: no lock file left behind
            self.release()
            raise
        return self

    def release(self) -> None:
        if self.fd is None:
            return
        try:
            self.path.unlink(missing_ok=True)  # while still locked: nobody can take the old inode meanwhile
        finally:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> "RunLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


@contextmanager
def reading(folder: Path):
    """``with reading(folder):`` -- a shared flock on the folder for as long as it is read, so that a
    writer's ``remove_unless_read`` leaves it in place. FileNotFoundError when it is already gone."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)


def remove_unless_read(folder: Path) -> bool:
    """Delete ``folder`` unless a reader holds it (see ``reading``); True when it is gone. A folder
    being read stays for the writer's next rotation, so a slow reader is never starved by a fast writer."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except FileNotFoundError:
        return True
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
        shutil.rmtree(folder, ignore_errors=True)
        return True
    finally:
        os.close(fd)

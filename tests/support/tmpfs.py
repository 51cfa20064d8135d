"""A small tmpfs of the test's own, for filling a disk for real: mounted in a mount namespace that a
holder process keeps (``unshare``, as root or in a user namespace), so the host's mounts are never
touched and the mount goes away with the holder. Commands run inside it through ``nsenter``; the test
reads and fills it from outside through ``/proc/<holder>/root``."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path


class Tmpfs:
    """A tmpfs of ``size`` (as mount's ``size=``) at ``mountpoint``, seen only by the commands of
    ``inside``. Use as a context manager."""

    def __init__(self, mountpoint: Path, size: str) -> None:
        mountpoint.mkdir(parents=True, exist_ok=True)
        self.mountpoint = mountpoint
        script = f"mount -t tmpfs -o size={size} tmpfs '{mountpoint}' && echo mounted && exec sleep 3600"
        self._holder = subprocess.Popen(
            ["unshare", "--user", "--map-root-user", "--mount", "--propagation=private", "sh", "-c", script],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self._holder.stdout is not None
        line = self._holder.stdout.readline().strip()
        if line != "mounted":
            _, err = self._holder.communicate(timeout=10)
            raise RuntimeError(f"cannot mount a tmpfs in a namespace of its own: {err.strip()}")

    def __enter__(self) -> Tmpfs:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._holder.poll() is None:
            self._holder.send_signal(signal.SIGKILL)
        self._holder.wait(timeout=10)
        for stream in (self._holder.stdout, self._holder.stderr):
            if stream is not None:
                stream.close()

    def inside(self, *argv: str) -> list[str]:
        """``argv`` as a command line that runs in the tmpfs's namespace (same user, same files)."""
        nsenter = shutil.which("nsenter") or "nsenter"
        return [nsenter, "-t", str(self._holder.pid), "-U", "-m", "--preserve-credentials", *argv]

    def python(self, code: str, env: dict[str, str] | None = None) -> str:
        """Run Python ``code`` inside the namespace (this interpreter, ``env``); returns its stdout. A
        store on the tmpfs must be opened from inside: chDB resolves ``/proc/<pid>/root`` paths to the
        host's own directory."""
        done = subprocess.run(
            self.inside(sys.executable, "-c", code), capture_output=True, text=True, timeout=120, env=env
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def outside(self, relative: str = "") -> Path:
        """A path in the tmpfs as this process reaches it (plain files only; see ``python``)."""
        return Path(f"/proc/{self._holder.pid}/root") / str(self.mountpoint).lstrip("/") / relative

    def free_bytes(self) -> int:
        stat = os.statvfs(self.outside())
        return stat.f_bavail * stat.f_frsize

    def fill(self, name: str = "filler") -> int:
        """Take every free byte at once (as another program allocating a large file would); returns
        how many were taken."""
        path = self.outside(name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
        taken = 0
        try:
            # Others write meanwhile and it may fail: the loop below takes what is left.
            with contextlib.suppress(OSError):
                os.posix_fallocate(fd, 0, max(0, self.free_bytes() - (4 << 20)))
            taken = os.lseek(fd, 0, os.SEEK_END)
            chunk = b"\0" * (64 << 10)
            while True:
                try:
                    taken += os.write(fd, chunk)
                except OSError:
                    break
        finally:
            os.close(fd)
        return taken

    def free(self, name: str = "filler") -> None:
        self.outside(name).unlink()

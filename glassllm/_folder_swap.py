"""Replacing some files of a folder atomically as a whole: the machinery of save_pretrained.

A checkpoint is two files that must change together, and a file system renames one at a
time. So the new files are written into a fresh folder beside the target, the target's
other entries are carried over (hard links for files, subfolders moved after the swap),
and the two folders trade places in one step: ``renameat2(RENAME_EXCHANGE)`` on Linux,
``renameatx_np(RENAME_SWAP)`` on macOS. Whoever opens the target finds the old files or
the new ones, and the target is never missing, which matters to ``transformers``: a path
that is not a folder it takes for a model name on the Hugging Face Hub. Where the system
has no exchange, the old folder is moved aside and the new one moved in: never mixed, but
for an instant missing.

After an interruption (kill -9, a full disk, an error) the only trace is a hidden sibling
``.NAME.*.new`` folder, holding either the unfinished new files or the old folder.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Callable, Collection


def replace_files(target: Path, write: Callable[[Path], None], names: Collection[str]) -> None:
    """Give folder ``target`` (created if needed) the files ``names`` that ``write(folder)``
    writes into an empty folder, keeping its other entries, atomically as a whole."""
    real = Path(os.path.realpath(target))  # a symlink to a folder keeps pointing at it
    real.parent.mkdir(parents=True, exist_ok=True)
    old_mode = real.stat().st_mode & 0o7777 if real.is_dir() else None
    new = Path(tempfile.mkdtemp(prefix=f".{real.name}.", suffix=".new", dir=real.parent))
    try:
        os.chmod(new, old_mode if old_mode is not None else 0o777 & ~_umask())
        write(new)
        for name in names:
            os.chmod(new / name, 0o666 & ~_umask())  # as a new file: safetensors makes 0600
            _fsync(new / name)
        carried, folders = _carry_over(real, new, names) if old_mode is not None else ([], [])
        _fsync(new)
        cwd = _cwd()
        old = _swap_in(new, real)
    except BaseException:
        shutil.rmtree(new, ignore_errors=True)  # our own folder: nothing else is in it
        raise
    if old is not None:
        _tidy(old, real, folders, (*names, *carried), cwd)
    _fsync(real.parent)


def _tidy(old: Path, real: Path, folders: list[str], files: Collection[str],
          cwd: str | None) -> None:
    """After the swap: move the old folder's subfolders into the new one, remove the files
    the new one holds too, and the old folder if nothing else is in it."""
    for name in folders:
        os.rename(old / name, real / name)
    if cwd == str(real):
        os.chdir(real)  # this process stood in the old folder: stand in the new one
    for name in files:
        with contextlib.suppress(FileNotFoundError, IsADirectoryError):
            os.unlink(old / name)
    try:
        os.rmdir(old)
    except OSError:
        pass  # something appeared in it meanwhile: left for its owner, never deleted


def _carry_over(real: Path, new: Path, names: Collection[str]) -> tuple[list[str], list[str]]:
    """Hard-link (or copy) the target's other files into ``new``; return their names and
    those of its subfolders, which are moved after the swap."""
    carried, folders = [], []
    for entry in os.scandir(real):
        if entry.name in names:
            continue
        if entry.is_dir(follow_symlinks=False):
            folders.append(entry.name)
            continue
        destination = new / entry.name
        try:
            os.link(entry.path, destination, follow_symlinks=False)
        except OSError:  # no hard links here (some network and FUSE file systems)
            if entry.is_symlink():
                os.symlink(os.readlink(entry.path), destination)
            else:
                shutil.copy2(entry.path, destination)
        carried.append(entry.name)
    return carried, folders


def _swap_in(new: Path, real: Path) -> Path | None:
    """Put ``new`` at ``real``; return where the old folder went (None: there was none)."""
    if not os.path.lexists(real):
        os.rename(new, real)  # fails, changing nothing, if a folder appeared meanwhile
        return None
    if _exchange(new, real):
        return new
    aside = new.with_name(new.name[:-len(".new")] + ".old")
    os.rename(real, aside)
    try:
        os.rename(new, real)
    except BaseException:
        os.rename(aside, real)
        raise
    return aside


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one step; False where this system has no such call."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
    except (ImportError, OSError, TypeError):  # no ctypes, or no C library to open
        return False
    if sys.platform.startswith("linux") and hasattr(libc, "renameat2"):
        call = libc.renameat2  # glibc 2.28+, musl 1.2.2+
        call.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                         ctypes.c_uint]
        at_cwd, exchange = -100, 2  # AT_FDCWD, RENAME_EXCHANGE
        result = call(at_cwd, os.fsencode(a), at_cwd, os.fsencode(b), exchange)
    elif sys.platform == "darwin" and hasattr(libc, "renamex_np"):
        call = libc.renamex_np
        call.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint]
        result = call(os.fsencode(a), os.fsencode(b), 2)  # RENAME_SWAP
    else:
        return False
    if result == 0:
        return True
    error = ctypes.get_errno()
    if error in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False  # an old kernel, or a file system without exchange
    raise OSError(error, os.strerror(error), str(b))


def _fsync(path: Path) -> None:
    """Flush a file or folder to the disk, where the system can (not folders on Windows)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _cwd() -> str | None:
    try:
        return os.getcwd()
    except OSError:
        return None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask

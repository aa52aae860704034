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
``.NAME.*.new`` folder, holding either the unfinished new files or the old folder. The old
folder may still hold subfolders the target lacks (a kill between the swap and their move):
``finish_interrupted``, which the next load or save calls, moves them in.
"""

from __future__ import annotations

import contextlib
import errno
import filecmp
import os
import re
import shutil
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Callable, Collection

_NEW = ".new"  # the suffix of the folder a save writes


def replace_files(target: Path, write: Callable[[Path], None], names: Collection[str]) -> None:
    """Give folder ``target`` (created if needed) the files ``names`` that ``write(folder)``
    writes into an empty folder, keeping its other entries, atomically as a whole."""
    real = Path(os.path.realpath(target))  # a symlink to a folder keeps pointing at it
    real.parent.mkdir(parents=True, exist_ok=True)
    finish_interrupted(real, names)
    old_mode = real.stat().st_mode & 0o7777 if real.is_dir() else None
    try:
        new = Path(tempfile.mkdtemp(prefix=f".{real.name}.", suffix=_NEW, dir=real.parent))
    except PermissionError:  # its random name would only confuse: say which folder it is
        raise PermissionError(errno.EACCES, f"the folder {real.parent} is not writable, and "
                                            f"the new files are written there first, beside "
                                            f"{real.name}, then swapped in; make it writable "
                                            f"or save elsewhere", str(real.parent)) from None
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
        with contextlib.suppress(FileNotFoundError):  # finish_interrupted moved it meanwhile
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


def finish_interrupted(target: Path, names: Collection[str]) -> None:
    """Finish a replacement of folder ``target``'s files ``names`` that was stopped after
    its swap: the old folder, left beside it as ``.NAME.*.new`` (or ``.old``), holds
    subfolders that belong in the target. They are moved in, and the old folder tidied as
    the replacement would have. A subfolder the target holds too, or one that cannot be
    moved (a read-only folder), stays, with a warning saying how to finish by hand. A
    leftover without subfolders holds no one's data (a save stopped before its swap) and
    is left alone: the save writing it may still be running."""
    real = Path(os.path.realpath(target))
    leftover = re.compile(re.escape(f".{real.name}.") + r"[a-z0-9_]{8}\.(?:new|old)")
    try:
        if not real.is_dir():
            return
        olds = [Path(entry.path) for entry in os.scandir(real.parent)
                if leftover.fullmatch(entry.name) and entry.is_dir(follow_symlinks=False)]
    except OSError:
        return
    for old in olds:
        try:
            folders = [entry.name for entry in os.scandir(old)
                       if entry.is_dir(follow_symlinks=False)]
        except OSError:
            continue
        if not folders:
            continue
        left = []
        for name in folders:
            if os.path.lexists(real / name):
                left.append(name)
                continue
            try:
                os.rename(old / name, real / name)
            except FileNotFoundError:
                pass  # the interrupted save's own tidying, still running, moved it
            except OSError:
                left.append(name)
        if left:
            warnings.warn(f"{old} holds {', '.join(f'{name}/' for name in left)} of {real}, "
                          f"from a save that was interrupted after it swapped the folders, and "
                          f"{'they' if len(left) > 1 else 'it'} could not be moved back (one "
                          f"of that name is in {real}, or a folder is not writable): compare "
                          f"and move {'them' if len(left) > 1 else 'it'} into {real} yourself, "
                          f"then remove {old}", stacklevel=2)
            continue
        # tidied as the save would have: the old model's files, and the copies of files the
        # target holds too; anything else stays, and so does the folder holding it
        for entry in os.scandir(old):
            twin = real / entry.name
            with contextlib.suppress(OSError):
                if entry.name in names or (entry.is_file(follow_symlinks=False)
                                           and twin.is_file() and _same_file(entry.path, twin)):
                    os.unlink(entry.path)
        with contextlib.suppress(OSError):
            os.rmdir(old)


def _same_file(a, b) -> bool:
    """Hard links of one file, or copies of it."""
    return os.path.samefile(a, b) or filecmp.cmp(a, b, shallow=False)


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
    aside = new.with_name(new.name[:-len(_NEW)] + ".old")
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

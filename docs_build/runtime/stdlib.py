"""The Python standard library the reader's browser downloads: Pyodide's ``python_stdlib.zip``
without the modules a glassllm run can never import.

Pyodide's zip is CPython's whole standard library (2.3 MB, 554 files). A run in the browser
imports about a hundred of its modules (Pyodide's boot, NumPy, glassllm, the bridge, the worked
numbers' code). What goes is what has no use in a sandboxed numeric run: test and debugging
tools, servers and network protocols, process pools, the XML stack, audio formats, and the
legacy code pages of ``encodings`` (the page hands Python its text as ``str``; bytes are
UTF-8). Everything else stays, so a module imported lazily on a path nobody measured (an
error's traceback, a warning) is still there. That is about 0.9 MB of the download.

Every member kept is Pyodide's, byte for byte once unpacked (``tests/docs_build/runtime/
test_stdlib.py``); the browser tests run every operation of the runtime on this zip. CPython's
licence asks a derivative work to say what it changed: ``changes_notice`` does, in the
site's ``licenses/`` folder.
"""

from __future__ import annotations

import functools
import io
import re
import zipfile

STDLIB_FILE = "python_stdlib.zip"  # its name in Pyodide's package and in the site

# Top-level modules and packages dropped, by what they are for
DROPPED = frozenset({
    # testing, debugging, profiling, documentation
    "unittest", "doctest", "pdb", "bdb", "pydoc", "pydoc_data", "profile", "cProfile",
    "pstats", "trace", "tabnanny", "pyclbr", "pickletools", "modulefinder", "zipapp",
    "rlcompleter",
    # servers, network protocols and the web (a worker with no network but the site's)
    "http", "xmlrpc", "wsgiref", "socketserver", "smtplib", "imaplib", "poplib", "ftplib",
    "nntplib", "telnetlib", "mailbox", "mailcap", "cgi", "cgitb", "netrc", "webbrowser",
    # processes (Pyodide has none) and the XML stack
    "multiprocessing", "xml",
    # audio and old file formats
    "aifc", "sunau", "wave", "chunk", "sndhdr", "imghdr", "uu", "xdrlib",
    # Unix shell and password tools, Windows paths in URLs
    "pipes", "crypt", "nturl2path",
    # the pure-Python fallback of io (the C one is built in) and the jokes
    "_pyio", "antigravity", "this", "__hello__", "__phello__",
})
# The codecs of ``encodings`` kept: Unicode's, ASCII and Latin-1, what Python's own machinery
# names (idna, punycode, the escapes, charmap), Windows' cp1252 and DOS' cp437
KEPT_ENCODINGS = frozenset({
    "__init__", "aliases", "ascii", "latin_1", "utf_8", "utf_8_sig", "utf_16", "utf_16_be",
    "utf_16_le", "utf_32", "utf_32_be", "utf_32_le", "unicode_escape", "raw_unicode_escape",
    "charmap", "idna", "punycode", "base64_codec", "hex_codec", "cp1252", "cp437",
})
_ENCODING = re.compile(r"encodings/([^/]+)\.py")


def kept(name: str) -> bool:
    """Whether the member ``name`` of Pyodide's zip is in the site's."""
    top = name.split("/", 1)[0].removesuffix(".py")
    if top in DROPPED:
        return False
    codec = _ENCODING.fullmatch(name)
    return codec is None or codec.group(1) in KEPT_ENCODINGS


@functools.lru_cache(maxsize=2)  # half a second a build: mkdocs serve's rebuilds reuse it
def trimmed_stdlib(pyodide_zip: bytes) -> bytes:
    """Pyodide's ``python_stdlib.zip`` with only the ``kept`` members, in its order and with
    its dates: the same input gives the same bytes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(pyodide_zip)) as source, \
            zipfile.ZipFile(buffer, "w") as archive:
        for info in source.infolist():
            if not kept(info.filename):
                continue
            entry = zipfile.ZipInfo(info.filename, date_time=info.date_time)
            entry.external_attr = info.external_attr
            entry.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(entry, source.read(info), compresslevel=9)
    return buffer.getvalue()


def changes_notice(pyodide_zip: bytes, version: str) -> bytes:
    """The summary of changes CPython's licence (PSF-2.0, clause 3) asks of a derivative
    work: which members of Pyodide ``version``'s zip the site leaves out."""
    with zipfile.ZipFile(io.BytesIO(pyodide_zip)) as source:
        names = [info.filename for info in source.infolist()]
    dropped = [name for name in names if not kept(name)]
    lines = [f"{STDLIB_FILE}: the Python standard library of Pyodide {version} (CPython 3.12,",
             "PSF License 2.0, see CPython-PSF-2.0.txt), changed by glassllm's docs build",
             "(docs_build/runtime/stdlib.py): these members are left out, because a run of",
             "glassllm in the browser never imports them. Every other member is unchanged.",
             f"{len(dropped)} of {len(names)} members left out:", ""]
    return ("\n".join(lines + dropped) + "\n").encode("utf-8")

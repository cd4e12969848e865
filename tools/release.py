"""Pack and verify the release bundle: every edition of one version of the book, in one folder.

Usage (``make release`` runs the three in this order, after building the editions)::

    python tools/release.py check-tag [TAG]
    python tools/release.py pack --html DIR --pdf FILE --student DIR --colab-full DIR \\
        --colab-student DIR --out DIR
    python tools/release.py verify DIR
    python tools/release.py notes DIR > NOTES.md

``check-tag`` compares a release tag with the version (``sxor/_version.py``): the tag is the
argument, else ``RELEASE_TAG``, else ``GITHUB_REF_NAME`` when it starts with ``v`` (what the
publish workflow is started with). No tag given: nothing to compare, exit 0 with a note.

``pack`` writes into ``--out`` (emptied first):

* ``book-html-VERSION.tar.gz``: the website, one top folder ``book-html-VERSION/``, readable
  offline (open ``index.html``);
* ``book-VERSION.pdf``: the whole book in one PDF;
* ``notebooks-student-VERSION.zip``: every notebook without its solutions;
* ``colab-full-VERSION.zip`` and ``colab-student-VERSION.zip``: the two Colab editions;
* ``manifest.json``: name, version, tag, commit, and for each file its name, size in bytes,
  SHA-256 and what it is; ``SHA256SUMS``: ``sha256sum -c`` reads it.

Archives are reproducible: entries sorted, times set to the commit's time, owners dropped.

``verify`` checks a bundle as a reader would receive it: exactly the manifest's files plus the
two lists, each with its size and SHA-256, ``SHA256SUMS`` equal to the manifest, the PDF a PDF,
each zip readable with only notebooks in it; then it unpacks the HTML tarball into a temporary
folder and runs the site check on it (``tools/check_site.py``, offline, no browser). Exit 1 on
any problem, each printed on one line.

``notes`` prints the release's description: this version's section of ``CHANGELOG.md`` and the
bundle's files with their sizes and SHA-256.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NAME = "sxor-book"
#: What each kind of file is, for the manifest (keys: the name without version and suffix).
DESCRIPTIONS = {
    "book-html": "the website, to read offline: unpack and open index.html",
    "book": "the whole book in one PDF",
    "notebooks-student": "every notebook without its solutions (exercise text kept)",
    "colab-full": "the Colab edition: every chapter as a notebook that reads like the book",
    "colab-student": "the Colab edition without solutions",
}
LISTS = ("manifest.json", "SHA256SUMS")


def version() -> str:
    """``__version__`` of ``sxor/_version.py``, read as text (no import of the package)."""
    text = (ROOT / "sxor" / "_version.py").read_text()
    match = re.search(r"^__version__\s*=\s*[\"']([^\"']+)[\"']", text, re.MULTILINE)
    if match is None:
        raise SystemExit("sxor/_version.py defines no __version__")
    return match.group(1)


def git(*args: str) -> str | None:
    try:
        result = subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return result.stdout.strip() if result.returncode == 0 else None


def commit() -> str:
    """The full hash of the checked-out commit, or "unknown" outside git."""
    return git("rev-parse", "HEAD") or "unknown"


def commit_time() -> int:
    """Seconds since 1980 or later (zip's epoch): ``SOURCE_DATE_EPOCH``, else the commit's time."""
    stamp = os.environ.get("SOURCE_DATE_EPOCH") or git("log", "-1", "--format=%ct") or "0"
    return max(int(stamp), 315532800)


def tag_from_env(env: dict[str, str] | os._Environ[str]) -> str | None:
    """The release tag named by the environment: ``RELEASE_TAG``, or ``GITHUB_REF_NAME`` when it
    is a version tag (starts with ``v``); None when neither names one."""
    if env.get("RELEASE_TAG"):
        return env["RELEASE_TAG"]
    ref = env.get("GITHUB_REF_NAME", "")
    return ref if ref.startswith("v") else None


def tag_problem(tag: str | None, current: str) -> str | None:
    """Why ``tag`` is not the release tag of version ``current`` (None if it is, or no tag)."""
    if tag is None or tag == f"v{current}":
        return None
    return (
        f"tag {tag!r} does not match the version {current!r} of sxor/_version.py (tag v{current})"
    )


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def files_under(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def write_tarball(folder: Path, out: Path, top: str, mtime: int) -> None:
    """``folder`` as ``out`` (gzip), every entry under ``top/``, byte for byte reproducible."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in files_under(folder):
            info = tarfile.TarInfo(f"{top}/{path.relative_to(folder).as_posix()}")
            info.size, info.mtime, info.mode = path.stat().st_size, mtime, 0o644
            with path.open("rb") as f:
                tar.addfile(info, f)
    with out.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=mtime) as gz:
        gz.write(buffer.getvalue())


def write_zip(folder: Path, out: Path, mtime: int) -> None:
    """Every notebook under ``folder`` as ``out``, paths relative to ``folder``, reproducible."""
    stamp = time.gmtime(mtime)[:6]
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in files_under(folder):
            if path.suffix != ".ipynb" or ".ipynb_checkpoints" in path.parts:
                continue
            info = zipfile.ZipInfo(path.relative_to(folder).as_posix(), date_time=stamp)
            info.compress_type, info.external_attr = zipfile.ZIP_DEFLATED, 0o644 << 16
            archive.writestr(info, path.read_bytes())


def pack(
    html: Path,
    pdf: Path,
    student: Path,
    colab_full: Path,
    colab_student: Path,
    out: Path,
    tag: str | None = None,
) -> dict:
    """Write the bundle into ``out`` (emptied first) and return its manifest."""
    current = version()
    for label, folder in (
        ("--html", html),
        ("--student", student),
        ("--colab-full", colab_full),
        ("--colab-student", colab_student),
    ):
        if not folder.is_dir() or not any(folder.rglob("*")):
            raise SystemExit(f"{label} {folder}: no such folder, or empty (build it first)")
    if not (html / "index.html").is_file():
        raise SystemExit(f"--html {html}: no index.html (build the website first)")
    if not pdf.is_file():
        raise SystemExit(f"--pdf {pdf}: no such file (make pdf)")
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    mtime = commit_time()
    names = {
        "book-html": f"book-html-{current}.tar.gz",
        "book": f"book-{current}.pdf",
        "notebooks-student": f"notebooks-student-{current}.zip",
        "colab-full": f"colab-full-{current}.zip",
        "colab-student": f"colab-student-{current}.zip",
    }
    write_tarball(html, out / names["book-html"], f"book-html-{current}", mtime)
    shutil.copyfile(pdf, out / names["book"])
    write_zip(student, out / names["notebooks-student"], mtime)
    write_zip(colab_full, out / names["colab-full"], mtime)
    write_zip(colab_student, out / names["colab-student"], mtime)
    files = [
        {
            "name": names[key],
            "size": (out / names[key]).stat().st_size,
            "sha256": sha256(out / names[key]),
            "description": DESCRIPTIONS[key],
        }
        for key in names
    ]
    manifest = {
        "name": NAME,
        "version": current,
        "tag": tag if tag is not None else f"v{current}",
        "commit": commit(),
        "files": files,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    sums = [(sha256(out / name), name) for name in sorted([*names.values(), "manifest.json"])]
    (out / "SHA256SUMS").write_text("".join(f"{digest}  {name}\n" for digest, name in sums))
    return manifest


def verify_files(bundle: Path) -> list[str]:
    """Problems of the bundle's files against its manifest and checksum list (no unpacking)."""
    try:
        manifest = json.loads((bundle / "manifest.json").read_text())
    except (OSError, ValueError) as error:
        return [f"manifest.json: unreadable ({error})"]
    problems = []
    for key in ("name", "version", "tag", "commit", "files"):
        if key not in manifest:
            problems.append(f"manifest.json: no {key!r}")
    if problems:
        return problems
    if manifest["tag"] != f"v{manifest['version']}":
        problems.append(f"manifest.json: tag {manifest['tag']} is not v{manifest['version']}")
    listed = {entry["name"]: entry for entry in manifest["files"]}
    present = {p.name for p in bundle.iterdir()}
    for name in sorted(present - set(listed) - set(LISTS)):
        problems.append(f"{name}: in the bundle but not in manifest.json")
    for name, entry in sorted(listed.items()):
        path = bundle / name
        if not path.is_file():
            problems.append(f"{name}: listed in manifest.json but missing")
            continue
        if path.stat().st_size != entry["size"]:
            problems.append(
                f"{name}: {path.stat().st_size} bytes, manifest.json says {entry['size']}"
            )
        if sha256(path) != entry["sha256"]:
            problems.append(f"{name}: SHA-256 differs from manifest.json")
        problems += check_content(path)
    sums_path = bundle / "SHA256SUMS"
    sums = {}
    if sums_path.is_file():
        for line in sums_path.read_text().splitlines():
            digest, _, name = line.partition("  ")
            sums[name] = digest
    expected = {name: entry["sha256"] for name, entry in listed.items()}
    if (bundle / "manifest.json").is_file():
        expected["manifest.json"] = sha256(bundle / "manifest.json")
    if sums != expected:
        problems.append("SHA256SUMS: does not list exactly the bundle's files with their SHA-256")
    return problems


def check_content(path: Path) -> list[str]:
    """A file is what its name says: a PDF, a zip of notebooks, a gzipped tar of a site."""
    name = path.name
    if name.endswith(".pdf"):
        return [] if path.read_bytes()[:5] == b"%PDF-" else [f"{name}: not a PDF"]
    if name.endswith(".zip"):
        try:
            with zipfile.ZipFile(path) as archive:
                members = archive.namelist()
                if archive.testzip() is not None:
                    return [f"{name}: a damaged member"]
                for member in members:
                    if not member.endswith(".ipynb") or not safe_member(member):
                        return [f"{name}: {member} is not a notebook at a relative path"]
                    if "cells" not in json.loads(archive.read(member)):
                        return [f"{name}: {member} is not a notebook"]
        except (zipfile.BadZipFile, ValueError) as error:
            return [f"{name}: not a zip of notebooks ({error})"]
        return [] if members else [f"{name}: no notebook in it"]
    if name.endswith(".tar.gz"):
        try:
            with tarfile.open(path, "r:gz") as tar:
                members = tar.getnames()
        except (tarfile.TarError, OSError) as error:
            return [f"{name}: not a gzipped tar ({error})"]
        unsafe = [m for m in members if not safe_member(m)]
        return [f"{name}: unsafe path {unsafe[0]}"] if unsafe else []
    return []


def safe_member(member: str) -> bool:
    return not member.startswith("/") and ".." not in Path(member).parts


def unpack_site(tarball: Path, into: Path) -> Path:
    """Unpack the HTML tarball under ``into``; the folder that holds ``index.html``."""
    with tarfile.open(tarball, "r:gz") as tar:
        tar.extractall(into, filter="data")
    tops = [p for p in into.iterdir() if p.is_dir()]
    if len(tops) != 1 or not (tops[0] / "index.html").is_file():
        raise SystemExit(f"{tarball.name}: expected one top folder with index.html")
    return tops[0]


def verify(bundle: Path, site_check: bool = True) -> list[str]:
    """Every problem of the bundle; ``site_check``: also unpack the site and check it offline."""
    problems = verify_files(bundle)
    tarballs = sorted(bundle.glob("book-html-*.tar.gz"))
    if len(tarballs) != 1:
        return [*problems, f"expected one book-html-*.tar.gz, found {len(tarballs)}"]
    if site_check and not problems:
        sys.path.insert(0, str(ROOT))
        from tools import check_site

        with tempfile.TemporaryDirectory() as tmp:
            site = unpack_site(tarballs[0], Path(tmp))
            here = Path.cwd()
            os.chdir(ROOT)  # the site check reads _toc.yml from the working folder
            try:
                if check_site.main(site, browser=False) != 0:
                    problems.append(f"{tarballs[0].name}: the unpacked site fails the site check")
            finally:
                os.chdir(here)
    return problems


def changelog_section(current: str, text: str) -> str:
    """The body of the section ``## CURRENT ...`` of a changelog (empty if there is none)."""
    match = re.search(
        rf"^## {re.escape(current)}\b[^\n]*\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL
    )
    return match.group(1).strip() if match else ""


def notes(bundle: Path) -> str:
    current = version()
    section = changelog_section(current, (ROOT / "CHANGELOG.md").read_text())
    if not section:
        raise SystemExit(f"CHANGELOG.md has no section for version {current}")
    manifest = json.loads((bundle / "manifest.json").read_text())
    rows = [
        f"- `{e['name']}` ({e['size'] / 1e6:.1f} MB): {e['description']}; SHA-256 `{e['sha256']}`"
        for e in manifest["files"]
    ]
    return (
        f"{section}\n\n### Files\n\nBuilt from commit {manifest['commit']}. "
        "`sha256sum -c SHA256SUMS` checks them.\n\n" + "\n".join(rows) + "\n"
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    tag = commands.add_parser("check-tag")
    tag.add_argument("tag", nargs="?")
    packing = commands.add_parser("pack")
    for option in ("--html", "--pdf", "--student", "--colab-full", "--colab-student", "--out"):
        packing.add_argument(option, type=Path, required=True)
    checking = commands.add_parser("verify")
    checking.add_argument("bundle", type=Path)
    checking.add_argument("--no-site-check", action="store_true")
    describing = commands.add_parser("notes")
    describing.add_argument("bundle", type=Path)
    args = parser.parse_args(argv)
    if args.command == "notes":
        sys.stdout.write(notes(args.bundle))
        return 0
    if args.command == "check-tag":
        given = args.tag or tag_from_env(os.environ)
        problem = tag_problem(given, version())
        print(problem or (f"tag {given} matches version {version()}" if given else "no tag given"))
        return 1 if problem else 0
    if args.command == "pack":
        given = tag_from_env(os.environ)
        problem = tag_problem(given, version())
        if problem:
            print(problem)
            return 1
        manifest = pack(
            args.html, args.pdf, args.student, args.colab_full, args.colab_student, args.out, given
        )
        for entry in manifest["files"]:
            print(f"{args.out / entry['name']}: {entry['size'] / 1e6:.1f} MB")
        return 0
    problems = verify(args.bundle, site_check=not args.no_site_check)
    for problem in problems:
        print(problem)
    print(f"release bundle {args.bundle}: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

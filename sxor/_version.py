"""The version of the package and of the book: one definition, read by ``pyproject.toml``
(setuptools' ``attr:``, without importing torch), by ``sxor.__version__``, by the site's footer
and the PDF's title page (``_ext/sxor_site.py``) and by the release (``tools/release.py``). A
release is tagged ``v`` + this version (``CHANGELOG.md``)."""

__version__ = "0.4.0"

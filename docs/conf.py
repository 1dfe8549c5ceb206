"""Sphinx configuration: Markdown pages (MyST), API pages from the numpydoc docstrings."""

project = "nodegrad"
author = "the nodegrad developers"
copyright = "2026, the nodegrad developers"  # noqa: A001  (Sphinx's name)

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build", "README.md"]
myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3

napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
autodoc_typehints = "none"  # the signatures show them; numpydoc sections describe them
autodoc_member_order = "bysource"

html_theme = "furo"
html_title = "nodegrad"

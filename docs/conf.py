"""Sphinx configuration: Markdown pages and notebooks (MyST-NB), API pages from the numpydoc docstrings."""

project = "nodegrad"
author = "the nodegrad developers"
copyright = "2026, the nodegrad developers"  # noqa: A001  (Sphinx's name)

extensions = [
    "myst_nb",  # MyST Markdown pages, and the notebooks executed at build time
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
]
# docs/notebooks links to the repository's notebooks/: jupytext percent scripts, read as notebooks.
nb_custom_formats = {".py": ["jupytext.reads", {"fmt": "py:percent"}]}
# notebooks/*.ipynb are what the README's notebooks command writes beside the scripts: not pages.
exclude_patterns = ["_build", "README.md", "conf.py", "generate.py", "jupyter_execute", "notebooks/*.ipynb"]
nb_execution_mode = "force"  # every build runs them, so a page always shows current outputs
nb_execution_timeout = 120
nb_execution_raise_on_error = True
nb_merge_streams = True
myst_enable_extensions = ["attrs_block", "colon_fence"]  # attrs_block: {.class} on a table
myst_heading_anchors = 3

napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
autodoc_typehints = "none"  # the signatures show them; numpydoc sections describe them
autodoc_member_order = "bysource"

html_theme = "furo"
html_title = "nodegrad"

# numpydoc type descriptions are prose ("array of shape (n, n)"); Sphinx's Python domain
# tries to link each word of them, and "shape" names two attributes.
suppress_warnings = ["ref.python"]
html_static_path = ["_static"]
html_css_files = ["nodegrad.css"]

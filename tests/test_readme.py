"""The README's example runs and prints what the README says it prints."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).parent.parent / "README.md"


def test_readme_example_prints_what_it_claims() -> None:
    code = re.search(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    assert code is not None
    source = code.group(1)
    claimed = re.search(r"print\(g\)\s+# (.*)", source)
    assert claimed is not None
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(source, str(README), "exec"), {"__name__": "readme"})
    assert out.getvalue().strip() == claimed.group(1).strip()

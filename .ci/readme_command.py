"""Print one of the README's shell commands, found by the sentence that introduces it.

CI runs the commands a reader copies, not copies of them kept here:
``python .ci/readme_command.py "Run the tests"`` prints the first ```bash block after the
first line of README.md that starts with those words, and fails when there is none.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def command(introduction: str, text: str) -> str:
    """The body of the first bash block after the line that starts with ``introduction``."""
    pattern = rf"^{re.escape(introduction)}[^\n]*\n(?:(?!```)[^\n]*\n)*?```bash\n(.*?)```"
    found = re.search(pattern, text, re.MULTILINE | re.DOTALL)
    if found is None:
        msg = f"README.md has no ```bash block introduced by a line starting {introduction!r}"
        raise SystemExit(msg)
    return found.group(1).strip()


if __name__ == "__main__":
    print(command(sys.argv[1], README.read_text(encoding="utf-8")))

"""The README's set-up commands stay true: CI runs the README's test command as written."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _bash_blocks() -> list[str]:
    return re.findall(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), re.S)


def test_ci_runs_the_readmes_test_command():
    test_command = next(b.strip() for b in _bash_blocks() if "pytest" in b)
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert test_command in ci


def test_setup_makes_a_venv_and_takes_torch_from_the_cpu_index():
    blocks = _bash_blocks()
    assert "python3 -m venv .venv && . .venv/bin/activate" in blocks[0]
    assert "git clone" in blocks[0] and "cd tapeflow" in blocks[0]
    assert blocks[1].strip() == 'pip install -e ".[all]" && tapeflow train'
    assert "--index-url https://download.pytorch.org/whl/cpu" in blocks[2]

"""Execute notebooks in place and store their outputs (what nbval later compares).

Usage: python tools/execute_notebooks.py book/*.ipynb
"""

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

for name in sys.argv[1:]:
    path = Path(name)
    nb = nbformat.read(path, as_version=4)
    NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    nbformat.write(nb, path)
    print(f"executed {path}")

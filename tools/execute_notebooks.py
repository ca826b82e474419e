"""Execute notebooks in place and store their outputs (what nbval later compares).

Usage: python tools/execute_notebooks.py book/*.ipynb
"""

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

for name in sys.argv[1:]:
    path = Path(name)
    nb = nbformat.read(path, as_version=4)
    try:
        NotebookClient(
            nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
        ).execute()
    except CellExecutionError as exc:
        # the cell's error in one line (a chapter shows a DataError as its message alone: the file,
        # the item and the command that writes it); the notebook is left as it was
        print(f"error: {path}: {exc.ename}: {exc.evalue}", file=sys.stderr)
        sys.exit(1)
    nbformat.write(nb, path)
    print(f"executed {path}")

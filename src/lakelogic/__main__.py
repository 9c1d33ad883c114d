"""``python -m lakelogic …``: the ``lakelogic`` command, for environments without the console script."""

from lakelogic.cli.main import app

if __name__ == "__main__":
    app(prog_name="lakelogic")

"""``python -m simrec``: the same entry point as the ``simrec`` command (:func:`simrec.cli.main`)."""

from simrec.cli import main

if __name__ == "__main__":
    main()

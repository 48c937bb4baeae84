"""Whether a Python can build this project's environments, in one line where it cannot.

  PYTHONPATH=scripts python3 -m d2lperf.pythons [NAME]  # nothing, or why not (exit 1)

The Makefile runs it with $(PYTHON) before it builds anything: MXNet 1.9.1's environment
is pinned for Python 3.11, 3.12 and 3.13 only (envs/mxnet.lock.txt: numpy 1.23.5, 1.26.4
and 2.x, one per Python), and ``python -m venv`` needs ensurepip, which Debian and Ubuntu
ship apart (python3-venv). Written to run on any Python, 2.7 included (no f-strings), so
that an old one is named rather than crashing.
"""

import sys

SUPPORTED = ((3, 11), (3, 12), (3, 13))


def listed():
    """'3.11, 3.12 or 3.13'."""
    names = ["{}.{}".format(*v) for v in SUPPORTED]
    return ", ".join(names[:-1]) + " or " + names[-1]


def problem(version=None, has_ensurepip=None, name=None):
    """Why this Python (or the one described) cannot build the environments; None where
    it can. ``name``: how it was given (``python3``: PYTHON=python3 (/usr/bin/python3))."""
    version = tuple(sys.version_info[:3]) if version is None else tuple(version)
    given = "PYTHON=" + name if name else "this Python"
    if name != sys.executable:
        given += " (" + sys.executable + ")"
    here = given + " is Python " + ".".join(str(n) for n in version)
    if tuple(version[:2]) not in SUPPORTED:
        return (here + "; the environments are built with Python " + listed() + " (MXNet "
                "1.9.1's numpy pins): point PYTHON= at one, e.g. `make report "
                "PYTHON=python3.12` or PYTHON=/path/to/bin/python3.12")
    if has_ensurepip is None:
        has_ensurepip = ensurepip_works()
    if not has_ensurepip:
        minor = "python{}.{}-venv".format(*version[:2])
        return (here + " without ensurepip, which `python -m venv` needs: install "
                "Debian/Ubuntu's python3-venv (for this Python, " + minor + ": sudo apt "
                "install " + minor + "), or point PYTHON= at another Python " + listed())
    return None


def ensurepip_works():
    """Whether ``python -m venv`` can put pip in: ensurepip imports and finds its pip."""
    try:
        import ensurepip

        ensurepip.version()
    except Exception:  # ImportError on Debian without python3-venv; no wheel found
        return False
    return True


def main():
    why = problem(name=sys.argv[1] if len(sys.argv) > 1 else None)
    if why:
        sys.stdout.write(why + "\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

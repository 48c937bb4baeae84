"""The document's imperative-versus-symbolic demo (seeds/000: 命令式和符号式混合编程, 测试).

Plain Python, the same for both frameworks: the program is built as a string, compiled,
then executed, and prints ``fancy_func(1, 2, 3, 4)``.
"""

from __future__ import annotations

import contextlib
import io


def add_str() -> str:
    return """
def add(a, b):
    return a + b
"""


def fancy_func_str() -> str:
    return """
def fancy_func(a, b, c, d):
    e = add(a, b)
    f = add(c, d)
    g = add(e, f)
    return g
"""


def evoke_str() -> str:
    return add_str() + fancy_func_str() + """
print(fancy_func(1, 2, 3, 4))
"""


def run_program() -> str:
    """What the compiled program prints (the document: 10)."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(evoke_str(), "", "exec"), {})
    return printed.getvalue().strip()

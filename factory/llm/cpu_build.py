"""Which CPU the embedded llama.cpp runtime was built for, and whether that is safe here.

ggml reports the instruction sets it was compiled with (``llama_print_system_info``). A
build for the build machine's own CPU (``GGML_NATIVE``, llama.cpp's default) on a CPU
that reports AMX turns on ggml's AMX matrix kernels, which segfault at the first prompt
on some machines: the whole process dies by a signal, tests and runs with it. The
project therefore builds a portable x86-64 target (``scripts/install.sh``: AVX2, FMA,
F16C; no AVX-512, no AMX). The backend refuses an AMX build with a message instead of
crashing, ``factory llm check`` shows the features, and ``python -m factory.llm.cpu_build
--require-portable`` is the install script's last check.
"""

from __future__ import annotations

import argparse
import re
import sys

from factory.errors import FactoryError

REINSTALL = "rebuild it for a portable target: bash scripts/install.sh (CMAKE_ARGS='-DGGML_NATIVE=OFF ...')"
CRASHING = ("AMX",)  # kernels that crash on some machines: refused at load
NOT_PORTABLE = ("AMX", "AVX512")  # features a build for other machines of this kind must not assume


class NativeBuildError(FactoryError):
    pass


def system_info() -> str:
    """ggml's own report, e.g. 'CPU : SSE3 = 1 | AVX = 1 | AVX2 = 1 | ...'."""
    import llama_cpp

    raw = llama_cpp.llama_print_system_info()
    return (raw.decode() if isinstance(raw, bytes) else str(raw)).strip()


def features(info: str | None = None) -> list[str]:
    """The instruction sets and options the runtime was built with (those reported as 1)."""
    info = system_info() if info is None else info
    return [name for name, value in re.findall(r"([A-Z][A-Z0-9_]*)\s*=\s*(\d+)", info) if value != "0"]


def offending(found: list[str], prefixes: tuple[str, ...]) -> list[str]:
    return [f for f in found if f.startswith(prefixes)]


def refuse_crashing_build(info: str | None = None) -> list[str]:
    """Raise when the runtime was built with kernels known to segfault; return its features."""
    found = features(info)
    bad = offending(found, CRASHING)
    if bad:
        raise NativeBuildError(
            f"llama-cpp-python was built with {', '.join(bad)} (a build for its build machine's own CPU); "
            f"ggml's AMX kernels segfault at the first prompt on some machines, so it is not loaded: {REINSTALL}"
        )
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--require-portable", action="store_true",
                        help=f"exit 1 when the build assumes any of {', '.join(NOT_PORTABLE)}")
    args = parser.parse_args(argv)
    try:
        found = features()
    except ImportError:
        print("llama-cpp-python is not installed", file=sys.stderr)
        return 1
    print(f"llama.cpp CPU build: {' '.join(found) or '(no features reported)'}")
    bad = offending(found, NOT_PORTABLE)
    if args.require_portable and bad:
        print(f"not a portable build: {', '.join(bad)}; {REINSTALL}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

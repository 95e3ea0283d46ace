"""Build the optional Cython extension; fall back to pure Python when it cannot be built."""
import os
import sys

from setuptools import setup
from setuptools.command.build_ext import build_ext


class OptionalBuildExt(build_ext):
    """Build extensions, but never fail the install if a compiler is missing."""

    def run(self):
        try:
            super().run()
        except Exception as exc:  # pragma: no cover - depends on the machine
            print(f"jetwire: compiled speedups not built ({exc}); using pure Python", file=sys.stderr)

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as exc:  # pragma: no cover
            print(f"jetwire: could not build {ext.name} ({exc}); using pure Python", file=sys.stderr)


def extensions():
    if os.environ.get("JETWIRE_NO_EXT"):
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        return []
    try:
        from setuptools import Extension

        concepts = ["lock", "msg", "headers", "metadata", "parser", "encoder", "router", "ackmux", "columns"]
        # no debug info in the shipped modules (about 6 MB with it, 1 MB without); gcc and
        # clang only: other compilers keep their defaults
        posix = os.name == "posix"
        mods = [
            Extension(f"jetwire._c.{name}", [f"ext/jetwire/_c/{name}.pyx"],
                      extra_compile_args=["-O3", "-g0"] if posix else [],
                      extra_link_args=["-Wl,--strip-debug"] if posix and sys.platform != "darwin" else [])
            for name in concepts
        ]
        return cythonize(
            mods,
            include_path=["ext"],
            compiler_directives={
                "language_level": 3,
                "boundscheck": False,
                "wraparound": False,
                "cdivision": True,
            },
            quiet=True,
        )
    except Exception as exc:  # pragma: no cover
        print(f"jetwire: cythonize failed ({exc}); using pure Python", file=sys.stderr)
        return []


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})

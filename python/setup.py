"""Build hook: generates the gRPC stubs of the v1 API from ../proto at build time.

The generated modules (pkforge.v1.*_pb2, *_pb2_grpc) are written into the build
tree only, never into the source tree: `pip install ./python` from a checkout
finds the .proto files next to this folder; elsewhere set PKFORGE_PROTO_DIR.
"""
import os
import pathlib

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = pathlib.Path(__file__).resolve().parent
PROTOS = [
    "pkforge/v1/common.proto",
    "pkforge/v1/executor.proto",
    "pkforge/v1/orchestrator.proto",
]


def proto_root() -> pathlib.Path:
    candidates = []
    if os.environ.get("PKFORGE_PROTO_DIR"):
        candidates.append(pathlib.Path(os.environ["PKFORGE_PROTO_DIR"]))
    candidates += [HERE.parent / "proto", HERE / "proto"]
    for c in candidates:
        if (c / PROTOS[0]).is_file():
            return c
    raise RuntimeError(
        "pkforge: the v1 .proto files were not found (looked in "
        + ", ".join(str(c) for c in candidates)
        + "); set PKFORGE_PROTO_DIR to the repository's proto/ folder"
    )


class BuildPyWithStubs(build_py):
    def run(self):
        super().run()
        import importlib.resources

        from grpc_tools import protoc

        out = pathlib.Path(self.build_lib)
        (out / "pkforge" / "v1").mkdir(parents=True, exist_ok=True)
        root = proto_root()
        include = str(importlib.resources.files("grpc_tools") / "_proto")
        args = [
            "grpc_tools.protoc",
            f"--proto_path={root}",
            f"--proto_path={include}",
            f"--python_out={out}",
            f"--pyi_out={out}",
            f"--grpc_python_out={out}",
        ] + [str(root / p) for p in PROTOS]
        if protoc.main(args) != 0:
            raise RuntimeError("pkforge: protoc failed on " + " ".join(PROTOS))
        (out / "pkforge" / "v1" / "__init__.py").write_text(
            '"""Generated from proto/pkforge/v1 at build time (setup.py)."""\n'
        )


setup(cmdclass={"build_py": BuildPyWithStubs})

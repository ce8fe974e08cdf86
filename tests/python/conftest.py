"""Shared fixtures of the vkml Python tests (run by CTest with the build tree's package on
PYTHONPATH, VKML_VALIDATION=1 and VKML_TOOL pointing at the built `vkml` command)."""
import os
import pathlib

import pytest

import vkml

HERE = pathlib.Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures"


@pytest.fixture(autouse=True)
def no_validation_messages():
    """Any Khronos validation message (or vkml error message) during a test fails it, as in the
    C++ suites."""
    vkml._vkml._take_messages()
    yield
    bad = [m for m in vkml._vkml._take_messages() if "[validation]" in m or m.startswith("error")]
    assert not bad, "validation messages:\n" + "\n".join(bad)


@pytest.fixture
def fixtures():
    return FIXTURES


@pytest.fixture
def tool():
    """The `vkml` command line of this build: the C++ Session's results to compare with."""
    path = os.environ.get("VKML_TOOL", "")
    if not path or not os.path.exists(path):
        pytest.skip("VKML_TOOL is not set to the built vkml command (CTest sets it)")
    return path


def model_cache():
    return pathlib.Path(os.environ.get("VKML_MODELS") or pathlib.Path.home() / ".cache/vkml/models")


def require_model(relative):
    """A model from the cache tools/fetch-models fills: missing fails in CI, skips elsewhere."""
    path = model_cache() / relative
    if not path.exists():
        message = f"{path} missing: run tools/fetch-models (or set VKML_MODELS)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path

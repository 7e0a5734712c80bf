from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from simindex import SimIndex

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def memory_index() -> Iterator[SimIndex]:
    with SimIndex(":memory:") as index:
        yield index


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "index.db"


@pytest.fixture
def file_index(db_path: Path) -> Iterator[SimIndex]:
    with SimIndex(db_path) as index:
        yield index


@pytest.fixture(params=["memory", "file"])
def index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SimIndex]:
    location = ":memory:" if request.param == "memory" else tmp_path / "index.db"
    with SimIndex(location) as ix:
        yield ix

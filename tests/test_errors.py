"""The error tree: one root, stable unique codes, all drawn in the docstring."""

from __future__ import annotations

import sqlite3

import pytest

from retain import errors
from retain.doors.cli import EXIT_BUG, EXIT_CODES, exit_code
from retain.storage.sqlite import SqliteBackend


def test_every_error_has_a_unique_snake_case_code() -> None:
    codes = [cls.code for cls in errors.all_error_classes()]
    assert len(codes) == len(set(codes))
    assert all(code.replace("_", "").isalpha() and code.islower() for code in codes)


def test_the_module_docstring_draws_every_class() -> None:
    doc = errors.__doc__ or ""
    for cls in errors.all_error_classes():
        assert f"{cls.__name__}" in doc and cls.code in doc, cls


def test_every_error_class_maps_to_a_cli_exit_code() -> None:
    for cls in errors.all_error_classes():
        if cls is errors.RetainError:
            continue
        code = exit_code(cls("x"))
        assert code != EXIT_BUG, cls
    assert len(set(EXIT_CODES.values())) == len(EXIT_CODES)


def test_error_carries_code_message_remedy_and_details() -> None:
    error = errors.NameConflict("clash", remedy="choose another name", name="tz")
    assert error.to_dict() == {
        "code": "name_conflict",
        "message": "clash",
        "remedy": "choose another name",
        "details": {"name": "tz"},
    }
    assert str(error) == "clash; choose another name"


def test_backend_errors_are_mapped_at_the_storage_boundary(tmp_path: object) -> None:
    backend = SqliteBackend(f"{tmp_path}/retain.db")

    def broken(tx: object) -> None:
        raise sqlite3.DatabaseError("disk image is malformed")

    with pytest.raises(errors.StoreError) as caught:
        backend.write(broken)  # type: ignore[arg-type]
    assert isinstance(caught.value.__cause__, sqlite3.DatabaseError)

    def locked(tx: object) -> None:
        raise sqlite3.OperationalError("database is locked")

    import retain.storage.sqlite as module

    module_retries = module._RETRIES
    module._RETRIES = 2
    try:
        with pytest.raises(errors.StoreBusy):
            backend.write(locked)  # type: ignore[arg-type]
    finally:
        module._RETRIES = module_retries
    backend.close()

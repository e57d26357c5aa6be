"""The Python SDK's exception classes against the generated protocol tables (one class per code)."""

from __future__ import annotations

import gymwire.errors as E
from gymwire._protocol import ERROR_CODES, SDK_ERROR_CODES


def test_every_wire_error_code_has_its_own_class() -> None:
    assert set(E.ERROR_CLASSES) == set(ERROR_CODES)
    for code, cls in E.ERROR_CLASSES.items():
        assert cls.code == code
        err = E.server_error({"code": code, "message": "m", "details": {"k": 1}})
        assert type(err) is cls and err.code == code and err.details == {"k": 1}


def test_every_local_sdk_code_has_its_own_class() -> None:
    assert set(E.SDK_ERROR_CLASSES) == set(SDK_ERROR_CODES)
    for code, cls in E.SDK_ERROR_CLASSES.items():
        assert cls.code == code


def test_unknown_codes_keep_the_original_code() -> None:
    err = E.server_error({"code": "ENV_ERR_FROM_THE_FUTURE", "message": "m"})
    assert isinstance(err, E.InternalServerError)
    assert err.details["original_code"] == "ENV_ERR_FROM_THE_FUTURE"


def test_fault_of_follows_the_registry() -> None:
    assert E.fault_of("ENV_ERR_INVALID_ACTION") == "client"
    assert E.fault_of("ENV_ERR_ENV_FAILURE") == "env"
    assert E.fault_of("ENV_ERR_REPLY_EXPIRED") == ERROR_CODES["ENV_ERR_REPLY_EXPIRED"][0]

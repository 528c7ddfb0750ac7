"""The test suite writes nothing to the user's home: index caches built by fixtures of any scope go to the
session's temporary folder (tests/conftest.py, `_isolated_cache`)."""

from __future__ import annotations


def test_a_module_fixture_builds_its_indexes_in_the_sessions_temporary_cache(cache_a_module_fixture_sees,
                                                                            tmp_path_factory):
    assert cache_a_module_fixture_sees == str(tmp_path_factory.getbasetemp() / "index-cache")

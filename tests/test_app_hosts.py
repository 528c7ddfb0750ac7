"""The Traces page over several hosts' trace files (issue 31, item 7): it reads the folder
$LOOKUP_KNOWLEDGE_TRACES names as one, and its Host filter (`tr_host`) keeps some hosts' rows."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest

from tests.app_helpers import APP, ok
from tests.trace_hosts_helpers import HOSTS, three_hosts


def test_the_traces_page_reads_every_hosts_file_and_filters_by_host(tmp_path, monkeypatch):
    folder = tmp_path / "shared"
    three_hosts(folder)
    monkeypatch.setenv("LOOKUP_KNOWLEDGE_TRACES", str(folder))
    monkeypatch.setenv("LOOKUP_KNOWLEDGE_HOST", "analyst")  # the app writes its own file there
    at = ok(AppTest.from_file(APP, default_timeout=60).run())
    at = ok(at.switch_page("appui/pages/traces.py").run())
    at = ok(at.selectbox(key="tr_run").set_value("(all)").run())
    assert any(f"**{sum(HOSTS.values())} trace(s)** match" in m.value for m in at.markdown)
    assert set(at.multiselect(key="tr_host").options) == set(HOSTS)
    at = ok(at.multiselect(key="tr_host").set_value(["beta"]).run())
    assert any(f"**{HOSTS['beta']} trace(s)** match" in m.value for m in at.markdown)
    shown = at.dataframe(key="tr_table").value
    assert set(shown["host"]) == {"beta"} and shown["pid"].nunique() == 1
    assert json.dumps(sorted(shown["query"])) == json.dumps([f"beta {i}" for i in range(HOSTS["beta"])])

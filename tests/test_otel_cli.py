"""OpenTelemetry from the command line: the settings the OTEL_* variables and `--otlp-endpoint` make, nothing of
OpenTelemetry loaded without them, spans sent over real OTLP/HTTP to a receiver, and bad endpoints."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from retrieval.otel import OTelSettings, settings_from_env

BASE = "http://collector.example:4318"


def test_no_endpoint_means_no_export():
    assert settings_from_env({}) is None
    assert settings_from_env({"OTEL_SERVICE_NAME": "agent"}) is None


def test_base_endpoint_gets_the_traces_path():
    assert settings_from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": BASE + "/"}) == OTelSettings(BASE + "/v1/traces")


def test_traces_endpoint_is_used_as_it_is_and_wins_over_the_base():
    environ = {"OTEL_EXPORTER_OTLP_ENDPOINT": BASE, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": BASE + "/custom/path",
               "OTEL_SERVICE_NAME": "support-agent", "OTEL_EXPORTER_OTLP_TIMEOUT": "2500"}
    assert settings_from_env(environ) == OTelSettings(BASE + "/custom/path", "support-agent", 2.5)


def test_flag_wins_over_the_environment_and_takes_a_full_url_too():
    environ = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": BASE + "/other"}
    assert settings_from_env(environ, "http://127.0.0.1:6006").endpoint == "http://127.0.0.1:6006/v1/traces"
    assert settings_from_env({}, "http://127.0.0.1:6006/v1/traces").endpoint == "http://127.0.0.1:6006/v1/traces"


def test_sdk_disabled_turns_the_environment_off():
    assert settings_from_env({"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": BASE}) is None


@pytest.mark.parametrize(("value", "words"), [("localhost:4318", "http:// or https://"),
                                              ("ftp://host:21", "http:// or https://"),
                                              ("http://:4318", "with a host"),
                                              ("http://host:99999", "invalid port"),
                                              ("http://host:4318/?x=1", "query or fragment")])
def test_malformed_endpoint_is_refused_saying_how_to_fix_it(value, words):
    with pytest.raises(ValueError, match="--otlp-endpoint") as raised:
        settings_from_env({}, value)
    assert words in str(raised.value) and repr(value) in str(raised.value)


def test_grpc_protocol_is_refused_naming_the_variable():
    with pytest.raises(ValueError, match="OTEL_EXPORTER_OTLP_PROTOCOL='grpc' is not supported.*http/protobuf"):
        settings_from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": BASE, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})


def test_bad_timeout_is_refused():
    with pytest.raises(ValueError, match="OTEL_EXPORTER_OTLP_TIMEOUT takes milliseconds"):
        settings_from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": BASE, "OTEL_EXPORTER_OTLP_TIMEOUT": "soon"})


def test_cli_lookup_without_an_endpoint_imports_nothing_of_opentelemetry(tmp_path):
    script = ("import runpy, sys\n"
              "sys.argv = ['retrieval', 'lookup', 'rotate an API token', '--no-trace', '--compact']\n"
              "try:\n    runpy.run_module('retrieval', run_name='__main__')\nexcept SystemExit as done:\n"
              "    loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('opentelemetry', 'openinference'))\n"
              "    print(json.dumps({'code': done.code, 'loaded': loaded}), file=sys.stderr)\n")
    completed = subprocess.run([sys.executable, "-c", "import json\n" + script], cwd=tmp_path, capture_output=True,
                               text=True, timeout=120, env=_clean_env())
    report = json.loads(completed.stderr.strip().splitlines()[-1])
    assert report == {"code": 0, "loaded": []}
    assert json.loads(completed.stdout)["evidence_blocks"]


def test_cli_lookup_sends_its_spans_to_the_endpoint(tmp_path):
    pytest.importorskip("opentelemetry.sdk", reason="the [otel] extra is not installed")
    from retrieval.otel import OTLPReceiver
    from tests.otel_helpers import roots, run_cli

    with OTLPReceiver() as receiver:
        completed = run_cli("lookup", "rotate an API token", "--traces", str(tmp_path / "t.duckdb"),
                            "--otlp-endpoint", receiver.url.removesuffix("/v1/traces"), cwd=tmp_path,
                            env={"OTEL_SERVICE_NAME": "cli-test"})
    assert completed.returncode == 0, completed.stderr
    assert "warning" not in completed.stderr
    payload = json.loads(completed.stdout)
    [root] = roots(receiver.spans)
    assert root["attributes"]["lookup.invocation_id"] == payload["invocation_id"]
    assert root["attributes"]["openinference.span.kind"] == "RETRIEVER"
    assert root["resource"]["service.name"] == "cli-test"
    assert root["attributes"]["retrieval.documents.0.document.id"] == payload["primary"]["source"]
    children = [s for s in receiver.spans if s["parent_span_id"] == root["span_id"]]
    assert {c["name"] for c in children} >= {"L0 hints", "L1 search", "domain vote", "evidence"}


def test_cli_environment_variables_turn_export_on(tmp_path):
    pytest.importorskip("opentelemetry.sdk", reason="the [otel] extra is not installed")
    from retrieval.otel import OTLPReceiver
    from tests.otel_helpers import roots, run_cli

    with OTLPReceiver() as receiver:
        completed = run_cli("lookup", "invoice", "--no-trace", cwd=tmp_path,
                            env={"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": receiver.url})
    assert completed.returncode == 0, completed.stderr
    assert len(roots(receiver.spans)) == 1
    assert roots(receiver.spans)[0]["resource"]["service.name"] == "lookup-knowledge"


def test_cli_malformed_endpoint_exits_2_with_one_line(tmp_path):
    from tests.otel_helpers import run_cli

    completed = run_cli("lookup", "invoice", "--no-trace", "--otlp-endpoint", "localhost:4318", cwd=tmp_path)
    assert completed.returncode == 2 and completed.stdout == ""
    assert completed.stderr.startswith("error: --otlp-endpoint must be an http:// or https:// URL")
    assert len(completed.stderr.strip().splitlines()) == 1


def test_cli_dead_endpoint_answers_and_warns_once(tmp_path):
    pytest.importorskip("opentelemetry.sdk", reason="the [otel] extra is not installed")
    from tests.otel_helpers import dead_endpoint, run_cli

    endpoint = dead_endpoint()
    completed = run_cli("lookup", "invoice", "--traces", str(tmp_path / "t.duckdb"), "--otlp-endpoint", endpoint,
                        cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout)["evidence_blocks"]
    warnings = [line for line in completed.stderr.splitlines() if line.strip()]
    assert len(warnings) == 1 and warnings[0].startswith(f"warning: OTLP export to {endpoint}/v1/traces failed")


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}


def test_missing_otel_extra_is_a_clear_error(monkeypatch):
    from retrieval.otel import tracing_from_env

    monkeypatch.setitem(sys.modules, "retrieval.otel.export", None)  # as if the SDK were not installed
    with pytest.raises(ValueError, match=r"pip install 'lookup-knowledge\[otel\]'"):
        tracing_from_env("http://127.0.0.1:4318")

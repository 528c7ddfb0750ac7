"""Trace files for the content-gap tests and bench (tests/test_content_gaps*.py, bench/content_gaps.py): real
recorded rows of the sample knowledge base copied inside DuckDB with the questions, times and relevance grades a
scenario asks for, among them a PLANTED topic the sample base has no page on (anomaly detection).

Every question comes from templates with random slots, seeded, so a file is the same on every run. One real
lookup is recorded first (its row has every column a real row has); each generated row is that row with a new
id, time, query, run and relevance (`retrieval_details.relevance` and, when the file has them, schema v16's
columns), inserted from a DataFrame in one statement.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import pandas as pd

from retrieval import TraceStore, lookup_knowledge, open_index
from retrieval.paths import SAMPLE_KB, SAMPLE_QUERIES
from retrieval.traces import db as trace_db
from retrieval.traces import pack
from retrieval.traces.schema import TABLE

UNTIL = datetime(2026, 3, 1)  # the scenarios' "now": the window is [UNTIL - 7 d, UNTIL)
WEEK = timedelta(days=7)

PLANTED_TEMPLATES = (
    "How do I turn on anomaly detection for {metric}?",
    "Can anomaly detection alert me when {metric} on {thing} looks unusual?",
    "Does anomaly detection learn the weekly seasonality of {metric}?",
    "Why did anomaly detection flag {metric} on {thing} as an anomaly?",
    "How sensitive is anomaly detection on {metric}, and can I tune it?",
    "Is anomaly detection included in the {plan} plan?",
    "anomaly detection for {metric} on {thing}",
    "How long does anomaly detection need to learn the normal {metric} of {thing}?",
    "Can I silence anomaly detection alerts for {metric} during deploys?",
    "Show detected anomalies of {metric} on a dashboard",
)
PLANTED_TERMS = ("anomaly", "detection")
SLOTS = {
    "metric": ("CPU usage", "response time", "error rate", "memory use", "disk I/O", "request rate", "latency",
               "queue length", "packet loss"),
    "thing": ("my web servers", "the checkout service", "a Kubernetes cluster", "the database hosts",
              "an HTTP check", "every agent", "the API gateway"),
    "plan": ("Free", "Team", "Enterprise"),
    "os": ("Ubuntu", "Debian", "RHEL", "Windows Server", "macOS"),
    "screen": ("dashboards", "the status page editor", "the alert list", "the web app", "the settings page"),
    "region": ("Frankfurt", "the EU", "Switzerland", "Canada"),
}
NOISE_TOPICS = {  # other unanswered topics: (templates, questions in the previous window, in this one)
    "ansible": (("Is there an Ansible role to install the agent on {os}?",
                 "How do I roll out the agent with an Ansible playbook on {os}?",
                 "ansible playbook for the agent on {os}"), 20, 60),
    "dark mode": (("Is there a dark mode for {screen}?", "How do I switch {screen} to dark mode?",
                   "dark theme for {screen}"), 60, 20),
    "gdpr": (("Is Skylark GDPR compliant for data stored in {region}?",
              "Where do I sign the GDPR data processing agreement?",
              "Can my GDPR data stay in {region}?"), 30, 30),
}
ONE_OFF_WORDS = ("pizza", "weather", "football", "poetry", "guitar", "chess", "recipe", "holiday", "painting",
                 "astronomy", "gardening", "origami", "jazz", "sailing", "knitting", "volcano", "penguin", "opera")
RUN_ONLY_TEMPLATE = "How do I configure the quantum flux capacitor on {thing}?"  # unanswered, but in a run


@dataclass(frozen=True)
class PlannedRow:
    """One row to insert: its question, time, relevance level, whether it abstained, and its run (None:
    production)."""

    query: str
    created_at: datetime
    level: str
    abstained: bool
    run_id: str | None = None


def fill(template: str, rng: random.Random) -> str:
    """`template` with each slot drawn from SLOTS."""
    return template.format(**{name: rng.choice(values) for name, values in SLOTS.items()})


def questions(templates: Sequence[str], count: int, rng: random.Random) -> list[str]:
    """`count` questions from `templates`, slots drawn at random (repeats happen, as in real traffic)."""
    return [fill(rng.choice(templates), rng) for _ in range(count)]


def one_offs(count: int, rng: random.Random) -> list[str]:
    """Unrelated questions asked once each, a pair of off-topic words and a frame."""
    frames = ("what about {a} and {b}?", "tell me about {a} {b}", "{a} {b} tips", "is {a} better than {b}?")
    return [rng.choice(frames).format(a=rng.choice(ONE_OFF_WORDS), b=rng.choice(ONE_OFF_WORDS)) for _ in range(count)]


def answered_questions() -> list[str]:
    """The sample base's own questions (data/queries.jsonl): graded high or medium in the scenarios."""
    lines = SAMPLE_QUERIES.read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["text"] for line in lines if line.strip()]


def spread(texts: Iterable[str], start: datetime, span: timedelta, rng: random.Random, level: str = "none",
           run_id: str | None = None) -> list[PlannedRow]:
    """Rows of `texts` at random times in [start, start + span); unanswered unless `level` is high or medium
    (a low or none level abstains, as the lookup's relevance does)."""
    seconds = span.total_seconds()
    return [PlannedRow(text, start + timedelta(seconds=rng.random() * seconds), level, level in ("low", "none"),
                       run_id) for text in texts]


def planted_rows(*, seed: int = 53, planted: int = 300, answered: int = 400) -> list[PlannedRow]:
    """The planted scenario: 300 anomaly-detection questions in the last week (none before), the noise topics
    in both weeks, one-off questions, answered questions in both weeks, an evaluation run's unanswered rows, and
    rows older than both windows."""
    rng = random.Random(seed)
    this, before = UNTIL - WEEK, UNTIL - 2 * WEEK
    rows = spread(questions(PLANTED_TEMPLATES, planted, rng), this, WEEK, rng, "none")
    for templates, earlier, now in NOISE_TOPICS.values():
        rows += spread(questions(templates, earlier, rng), before, WEEK, rng, rng.choice(("low", "none")))
        rows += spread(questions(templates, now, rng), this, WEEK, rng, "low")
    rows += spread(one_offs(40, rng), before, 2 * WEEK, rng, "none")
    known = answered_questions()
    for level in ("high", "medium"):
        rows += spread(rng.choices(known, k=answered // 2), before, 2 * WEEK, rng, level)
    rows += spread(questions((RUN_ONLY_TEMPLATE,), 50, rng), this, WEEK, rng, "none", run_id="run-gaps")
    rows += spread(questions(PLANTED_TEMPLATES, 30, rng), UNTIL - 5 * WEEK, WEEK, rng, "none")  # long before
    return rows


def quiet_rows(*, seed: int = 7) -> list[PlannedRow]:
    """Only answered questions in both weeks: no content gap."""
    rng = random.Random(seed)
    return spread(rng.choices(answered_questions(), k=200), UNTIL - 2 * WEEK, 2 * WEEK, rng, "high")


FEATURE_WORDS = (
    "amber beacon", "basalt ledger", "cobalt relay", "dune sketch", "ember vault", "fjord atlas", "garnet pulse",
    "harbor lens", "indigo mosaic", "jade compass", "kelp archive", "lumen forge", "maple orbit", "nectar gauge",
    "onyx prism", "pebble radar", "quartz tunnel", "raven canvas", "saffron matrix", "tundra bridge",
    "umber spindle", "velvet harvest", "willow cipher", "xenon lattice", "yarrow kiln", "zephyr quarry",
    "acorn totem", "birch vortex", "cinder meadow", "delta fresco", "egret turbine", "falcon glacier",
    "granite lagoon", "hazel monsoon", "iris summit", "juniper canyon", "kestrel dynamo", "lotus mirage",
    "mistral oasis", "nimbus tapestry", "opal drift", "pine sonar", "quill beacon", "reef anthem", "sable comet",
    "thistle engine", "ursa mantle", "vesper cradle", "wren lantern", "yucca vessel", "zinnia rover",
    "alder plume", "bramble pylon", "cedar flux", "dahlia rampart", "elm quiver", "fern gyro", "gale trellis",
    "heron bastion", "ivy sextant")


def scale_rows(unanswered: int, *, seed: int = 20, answered: int = 0, topics: int = 60) -> list[PlannedRow]:
    """About `unanswered` unanswered questions in the last week and as many the week before, about `topics`
    made-up features (each its own two words, five phrasings with slots; sizes heavy-tailed) and one-offs (a
    tenth), plus `answered` answered rows: a large team's traffic, mostly distinct texts."""
    rng = random.Random(seed)
    templates = [(f"How do I set up {feature} for {{thing}}?", f"Does {feature} work with {{metric}}?",
                  f"{feature} on the {{plan}} plan", f"Why does {feature} ignore {{metric}} on {{thing}}?",
                  f"Can {feature} run on {{os}} for {{thing}}?") for feature in FEATURE_WORDS[:topics]]
    weights = [rng.paretovariate(1.2) for _ in templates]
    rows: list[PlannedRow] = []
    for start in (UNTIL - 2 * WEEK, UNTIL - WEEK):
        picks = rng.choices(templates, weights=weights, k=int(unanswered * 0.9))
        texts = [fill(rng.choice(t), rng) + f" ({rng.randrange(10**6)})" * (rng.random() < 0.5) for t in picks]
        rows += spread(texts + one_offs(unanswered - len(texts), rng), start, WEEK, rng, "none")
    known = answered_questions()
    rows += spread(rng.choices(known, k=answered), UNTIL - 2 * WEEK, 2 * WEEK, rng, "high")
    return rows


def write_trace_file(path: Path, rows: Sequence[PlannedRow], *, index=None) -> Path:
    """A trace file at `path` holding `rows` (each a copy of one real recorded lookup with its own id, time,
    question, run and relevance)."""
    store = TraceStore(path)
    lookup_knowledge("install skylark server on linux", index=index or open_index(SAMPLE_KB), recorder=store)
    store.flush()
    store.close()
    if pack(path, timeout=30.0) is None:
        raise RuntimeError(f"could not fold the seed row into {path}: another process held it")
    frame = pd.DataFrame({
        "new_created_at": [r.created_at for r in rows], "new_query": [r.query for r in rows],
        "new_run_id": [r.run_id for r in rows],
        "new_relevance": [json.dumps({"level": r.level, "abstain": r.abstained,
                                      "confidence": 0.9 if r.level == "high" else 0.6 if r.level == "medium" else 0.1})
                          for r in rows],
        "new_level": [r.level for r in rows], "new_abstained": [r.abstained for r in rows]})
    con = trace_db.connect(Path(path), timeout=30.0)
    try:
        columns = [r[0] for r in con.execute(f"SELECT column_name FROM (DESCRIBE {TABLE})").fetchall()]
        replaced = {"id": "uuid()::VARCHAR", "created_at": "f.new_created_at", "query": "f.new_query",
                    "run_id": "f.new_run_id",
                    "retrieval_details": "json_merge_patch(s.retrieval_details, "
                                         "json_object('relevance', f.new_relevance::JSON))",
                    "relevance_level": "f.new_level", "abstained": "f.new_abstained",
                    "confidence": "(f.new_relevance::JSON->>'confidence')::DOUBLE"}
        select = ", ".join(f"{replaced.get(c, 's.' + c)} AS {c}" for c in columns)
        con.register("planned", frame)
        con.execute(f"CREATE TEMP TABLE gap_seed AS SELECT * FROM {TABLE} LIMIT 1")
        con.execute(f"DELETE FROM {TABLE}")
        con.execute(f"INSERT INTO {TABLE} SELECT {select} FROM planned f CROSS JOIN gap_seed s")
        con.execute("CHECKPOINT")
    finally:
        con.close()
    return Path(path)

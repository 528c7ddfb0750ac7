"""Questions labelled answerable or not, for fitting and checking the relevance grade (issue 32).

Answerable: the sample's labelled questions on the sample knowledge base, the Hugo dev questions on the Hugo
docs, SciFact's train claims on its corpus. Unanswerable: the sample's own unanswerable questions, off-topic
questions (data/offtopic_queries.jsonl) on every base, each `kind` its own source (`off-topic`; and
`shares-one-word`: off-topic questions that share one word with one page of the sample, "when is the deadline
for filing my income taxes" and its invoices page), and each corpus's questions asked of the other bases
(a Hugo question has no answer in biomedical abstracts, nor in the sample's monitoring manual). SciFact's
test split is never read. Each question is in the held-out part or the fitting part by a stable hash of its
source and id, so the split never changes with the set's size or order.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from retrieval.paths import SAMPLE_KB

ROOT = Path(__file__).resolve().parents[1]
OFF_TOPIC = ROOT / "data" / "offtopic_queries.jsonl"
SAMPLE_QUERIES = ROOT / "data" / "queries.jsonl"
HELD_OUT_SHARE = 0.3  # of every source's questions, never used for fitting or thresholds
SCIFACT_CAP = 400  # SciFact claims used per pairing (deterministic by hash), so a run stays minutes


@dataclass(frozen=True)
class LabelledQuestion:
    """One question on one knowledge base; `relevant` is empty for an unanswerable one."""

    id: str
    text: str
    kb: str  # "sample", "hugo" or "scifact" (KNOWLEDGE_BASES)
    source: str  # where the question comes from and which base it is asked of: "hugo-dev→sample", "off-topic→hugo"
    relevant: tuple[str, ...]
    held_out: bool

    @property
    def answerable(self) -> bool:
        return bool(self.relevant)


def knowledge_bases(shared: Path) -> dict[str, Path]:
    """The three bases: the sample, the Hugo docs and SciFact's corpus (the last two under `shared`)."""
    return {"sample": SAMPLE_KB, "hugo": shared / "hugo_docs" / "content" / "en",
            "scifact": shared / "scifact" / "corpus.jsonl"}


def question_sets(shared: Path) -> list[LabelledQuestion]:
    """Every labelled question of every source (needs `shared`, the shared data folder)."""
    sample = read_rows(SAMPLE_QUERIES)
    hugo = read_rows(shared / "hugo_docs" / "dev_queries.jsonl")
    scifact = _scifact_train(shared / "scifact")
    off_topic = read_rows(OFF_TOPIC)
    out: list[LabelledQuestion] = []
    out += _asked("sample", [r for r in sample if r["relevant"]], "sample", answerable=True)
    out += _asked("sample-none", [r for r in sample if not r["relevant"]], "sample", answerable=False)
    out += _asked("hugo-dev", hugo, "hugo", answerable=True)
    out += _asked("scifact-train", scifact, "scifact", answerable=True)
    for kb in ("sample", "hugo", "scifact"):
        for kind in dict.fromkeys(r.get("kind", "off-topic") for r in off_topic):  # each kind its own source
            out += _asked(f"{kind}→{kb}", [r for r in off_topic if r.get("kind", "off-topic") == kind], kb,
                          answerable=False)
    out += _asked("hugo-dev→sample", hugo, "sample", answerable=False)
    out += _asked("hugo-dev→scifact", hugo, "scifact", answerable=False)
    out += _asked("scifact→hugo", scifact, "hugo", answerable=False)
    out += _asked("scifact→sample", scifact, "sample", answerable=False)
    out += _asked("sample→hugo", [r for r in sample if r["relevant"]], "hugo", answerable=False)
    return out


def held_out(source: str, question_id: str) -> bool:
    """Whether a question belongs to the held-out part: a stable hash, HELD_OUT_SHARE of each source."""
    digest = hashlib.sha256(f"{source}\0{question_id}".encode()).digest()
    return int.from_bytes(digest[:4], "big") / 2**32 < HELD_OUT_SHARE


def _asked(source: str, rows: Iterable[dict], kb: str, *, answerable: bool) -> list[LabelledQuestion]:
    return [LabelledQuestion(str(r["_id"]), str(r["text"]), kb, source,
                             tuple(r["relevant"]) if answerable else (), held_out(source, str(r["_id"])))
            for r in rows]


def _scifact_train(folder: Path) -> list[dict]:
    """SciFact claims judged relevant to some abstract in the train split, at most SCIFACT_CAP of them."""
    relevant: dict[str, list[str]] = {}
    for line in (folder / "qrels" / "train.tsv").read_text().splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and parts[2].strip().isdigit() and int(parts[2]) > 0:
            relevant.setdefault(parts[0], []).append(parts[1])
    rows = [{**r, "relevant": relevant[str(r["_id"])]} for r in read_rows(folder / "queries.jsonl")
            if str(r["_id"]) in relevant]
    rows.sort(key=lambda r: hashlib.sha256(str(r["_id"]).encode()).hexdigest())
    return rows[:SCIFACT_CAP]


def read_rows(path: Path) -> list[dict]:
    """A questions file's rows, `relevant` as a list of pages (empty for an unanswerable question)."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for row in rows:
        row.setdefault("relevant", [])
        if isinstance(row["relevant"], dict):
            row["relevant"] = [k for k, v in row["relevant"].items() if v]
    return rows

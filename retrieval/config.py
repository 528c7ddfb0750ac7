"""The one configuration object of a lookup; every field is also a CLI flag (`add_config_flags`) and an
`--set key=value`, typed and range-checked by the field's own range, as the app's inputs are."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any


def _opt(default: Any, help: str, flag: str | None = None, index: bool = False, *, low: float | None = None,
         high: float | None = None, advanced: bool = False, choices: tuple[str, ...] | None = None) -> Any:
    """A field with its help, CLI flag, whether it shapes the index, its allowed range [low, high] or `choices`
    (checked here, and used by the CLI, `--set` and the app's inputs alike) and whether it is an advanced
    setting."""
    return field(default=default, metadata={"help": help, "flag": flag, "index": index, "low": low, "high": high,
                                            "advanced": advanced, "choices": choices})


DEFAULT_SVD_DIMS = 256  # the dimensions an index is built with unless asked otherwise (IndexConfig's)


def changed_settings(config: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of a recorded `config` that differ from the defaults (fields of LookupConfig only); an
    `svd_dims` of the default index (unset, or DEFAULT_SVD_DIMS) is the default."""
    defaults = LookupConfig().to_dict()
    return {k: v for k, v in config.items() if k in defaults and defaults[k] != v
            and not (k == "svd_dims" and v in (None, DEFAULT_SVD_DIMS))}


def field_range(name: str) -> tuple[float, float] | None:
    """The allowed range of a LookupConfig field (None: any value of its type)."""
    meta = {f.name: f.metadata for f in fields(LookupConfig)}.get(name) or {}
    return None if meta.get("low") is None else (meta["low"], meta["high"])


def field_choices(name: str) -> tuple[str, ...] | None:
    """The allowed values of a LookupConfig text field with a fixed set of them (None: any text)."""
    return ({f.name: f.metadata for f in fields(LookupConfig)}.get(name) or {}).get("choices")


def is_advanced(name: str) -> bool:
    """Whether a LookupConfig field is an advanced setting (the domain vote's): marked so in --help and the app."""
    return bool(({f.name: f.metadata for f in fields(LookupConfig)}.get(name) or {}).get("advanced"))


@dataclass(frozen=True)
class LookupConfig:
    """Settings of one lookup. `index=True` fields change the L1 index and so its cache key."""

    top_k: int = _opt(5, "number of evidence blocks returned", low=1, high=1000)
    l1_enabled: bool = _opt(True, "run L1 semantic retrieval (off: L0 evidence only)", "--no-l1")
    l0_filter: bool = _opt(True, "send L0's single domain to L1 as a category filter", "--no-l0-filter")
    l1_min_score: float = _opt(0.05, "drop L1 candidates scoring below this (0..1; 1.0 keeps perfect matches)",
                               low=0.0, high=1.0)
    # one place: the index's; a lookup on an index of other dimensions is an error (check_index_dims)
    svd_dims: int | None = _opt(None, "LSA dimensions of the index these settings run on (unset: the index's "
                                      "own; an index opened for them is built with 256, capped by the corpus)",
                                index=True, low=1, high=4096)
    snippet_chars: int = _opt(800, "evidence content is cut to this many characters", low=20, high=1000000)
    simulate_l1_failure: bool = _opt(False, "failure drill: L1 raises, to preview an L1 outage")
    l1_tfidf_weight: float = _opt(0.9, "L1 score = w * lexical TF-IDF (BM25-weighted) + (1 - w) * LSA cosine",
                                  low=0.0, high=1.0)
    # 0.7: the best of a sweep on the Hugo dev questions and SciFact train together (docs/quality.md)
    l1_static_weight: float = _opt(0.7, "weight of the static embedding in L1's score: each pool page's static "
                                        "score, standardised over the pool's 20 best pages, times the spread of "
                                        "their scores (a third part beside lexical and LSA; 0 turns it off; a "
                                        "dense part, when on, takes its place)",
                                   low=0.0, high=100.0)
    l1_weight: float = _opt(1.0, "weight of the L1 score when ordering evidence", low=0.0, high=100.0)
    page_weight: float = _opt(0.5, "weight of the page-level score (BM25 over the whole page, relative to the "
                                   "query's best page) when ordering L1 candidates and evidence", low=0.0, high=100.0)
    l0_weight: float = _opt(0.2, "weight of the L0 score (share of the query it covers) when ordering evidence",
                            low=0.0, high=100.0)
    l0_max_matches: int = _opt(5, "most L0 entries that become hints and evidence", low=0, high=1000, advanced=True)
    l0_min_score_ratio: float = _opt(0.5, "L0 matches must score at least this share of the best match",
                                     low=0.0, high=1.0, advanced=True)
    # 20, not 30: the top 5 stays the same on every labelled set, and a smaller pool is faster; raise it with
    # top_k (docs/cli.md)
    l1_pool: int = _opt(20, "L1 pages fetched before merging by source (at least top-k), each with up to 3 of "
                            "its best sections", low=1, high=100000)
    l0_domain_top_n: int = _opt(3, "pages of the unfiltered ranking that vote on the domain L0's hints carry",
                                low=1, high=1000, advanced=True)
    l0_domain_temperature: float = _opt(0.2, "a voting page weighs exp((score - best score) / this): lower "
                                             "values let only near-best pages count",
                                        low=0.0, high=100.0, advanced=True)
    l0_domain_min_share: float = _opt(0.1, "a domain is carried when its share of the vote reaches this (and "
                                           "beats uncategorised pages); exactly one carried domain is the filter",
                                      low=0.0, high=1.0, advanced=True)
    l0_domain_min_coverage: float = _opt(0.8, "an L0 match whose fields hold this share of the query's IDF mass "
                                              "carries its domains too", low=0.0, high=1.0, advanced=True)
    l1_timeout_ms: int = _opt(2000, "stop waiting for L1 after this many milliseconds and answer from L0 (status "
                                    "`timeout`)", low=1, high=3600000)
    filter_widen_ratio: float = _opt(0.8, "widen an L0-derived filter when its best score is below this share of "
                                          "the unfiltered best (0: never widen)", low=0.0, high=1.0)
    # the contextual models a team plugs in (docs/models.md); off by default: the embedded default needs no weights
    l1_dense_model: str | None = _opt(None, "dense encoder that re-scores L1's pool: onnx:PATH, st:NAME_OR_PATH, "
                                            "callable:module:function or hash:DIM (unset: no dense part)")
    l1_dense_weight: float = _opt(1.0, "weight of the dense part in L1's score: each pool page's dense score (the "
                                       "mean of its whole text's and best section's cosines with the query), less "
                                       "the mean of the pool's 20 best pages' (l1_dense_norm)", low=0.0, high=100.0)
    l1_dense_pool: int = _opt(20, "L1 pages the dense part re-scores (L1 fetches at least this many when it is on)",
                              low=1, high=100000)
    l1_dense_norm: str = _opt("raw", "how the dense scores are normalised before weighting: raw (less the mean of "
                                     "the pool's 20 best pages) or z (standardised over them, times the spread of "
                                     "their fused scores)", choices=("raw", "z"))
    rerank_model: str | None = _opt(None, "cross-encoder that re-scores the best pages: onnx:PATH, st:NAME_OR_PATH, "
                                          "callable:module:function or hash (unset: no reranker)")
    rerank_top: int = _opt(10, "pages the reranker scores (the best of L1's pool)", low=1, high=1000)
    rerank_weight: float = _opt(1.0, "weight of the reranker's score: standardised over the pages it scored, times "
                                     "the spread of their scores", low=0.0, high=100.0)
    rerank_budget_ms: int = _opt(1000, "stop waiting for the reranker after this many milliseconds and answer "
                                       "without it (status `timeout`)", low=1, high=3600000)

    def __post_init__(self) -> None:
        for f in fields(self):
            value, kind = getattr(self, f.name), f.type if isinstance(f.type, str) else f.type.__name__
            if kind.startswith("int") and value is None and kind.endswith("None"):
                continue  # an optional number left unset
            if kind.startswith("int") and (isinstance(value, bool) or not isinstance(value, int)):
                raise ValueError(f"{f.name} must be a whole number, got {value!r}")
            if kind == "bool" and not isinstance(value, bool):
                raise ValueError(f"{f.name} must be true or false, got {value!r}")
            if kind.startswith("str") and not (value is None and kind.endswith("None")) and not isinstance(value, str):
                raise ValueError(f"{f.name} must be text, got {value!r}")
            if f.metadata.get("low") is not None:  # the field's own range, as the CLI and the app offer it
                _check_range(f.name, value, f.metadata["low"], f.metadata["high"])
            choices = f.metadata.get("choices")
            if choices and value not in choices:
                raise ValueError(f"{f.name} must be one of {', '.join(choices)}, got {value!r}")

    def check_index_dims(self, index_dims: int) -> None:
        """Refuse an index of other LSA dimensions than `svd_dims` asks for (unset: any index): a lookup would
        run at the index's dimensions while its settings, and every label made from them, said others."""
        if self.svd_dims is not None and self.svd_dims != index_dims:
            raise ValueError(f"svd_dims {self.svd_dims} does not match the index's {index_dims}: open the index "
                             f"with open_index(..., svd_dims={self.svd_dims}), or leave svd_dims unset to use the "
                             "index's own")

    def to_dict(self) -> dict[str, Any]:
        # every field is a scalar, so a shallow copy is asdict's result at a fifth of its cost (per lookup)
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def with_overrides(self, overrides: Mapping[str, Any]) -> LookupConfig:
        """A copy with `overrides` applied; string values (from `--set k=v`) are parsed to the field's type."""
        known = {f.name: f for f in fields(self)}
        unknown = sorted(set(overrides) - set(known))
        if unknown:
            raise ValueError(f"unknown setting(s) {unknown}; known settings: {', '.join(known)}")
        parsed = {k: _parse(k, known[k].type, v) for k, v in overrides.items()}
        return replace(self, **parsed)

    def index_settings(self) -> dict[str, Any]:
        """The fields that shape the index (part of the cache key)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.metadata.get("index")}


def parse_assignments(items: list[str]) -> dict[str, str]:
    """`["top_k=10", "l0_filter=false"]` -> dict; a malformed item names itself and the expected form."""
    result: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--set expects key=value, got {item!r} (e.g. --set top_k=10)")
        result[key.strip().replace("-", "_")] = value.strip()
    return result


def _parse(name: str, type_name: Any, value: Any) -> Any:
    kind = type_name if isinstance(type_name, str) else getattr(type_name, "__name__", str(type_name))
    if not isinstance(value, str):
        return value
    try:
        if kind == "bool":
            lowered = value.lower()
            if lowered not in ("true", "false", "1", "0", "yes", "no", "on", "off"):
                raise ValueError
            return lowered in ("true", "1", "yes", "on")
        if kind.endswith("None") and value.strip().lower() in ("", "none", "null"):
            return None
        if kind.startswith("int"):
            return int(value)
        if kind == "float":
            return float(value)
    except ValueError:
        raise ValueError(f"setting {name} expects a {kind}, got {value!r}") from None
    return value


def _check_range(name: str, value: Any, low: float, high: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise ValueError(f"{name} must be a number from {low} to {high}, got {value!r}")


def config_flag(name: str) -> str:
    """The CLI flag of a config field: its declared flag (e.g. `--no-l1`) or `--field-name`."""
    declared = {f.name: f.metadata.get("flag") for f in fields(LookupConfig)}
    return declared.get(name) or "--" + name.replace("_", "-")


def add_config_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per LookupConfig field; booleans that default on get a `--no-...` switch."""
    group = parser.add_argument_group("configuration")
    for f in fields(LookupConfig):
        flag, help_text = config_flag(f.name), f"{f.metadata['help']} (default: {f.default})"
        if f.type in (bool, "bool"):  # the flag turns the default over, and its help says so in that sense
            action = "store_false" if f.default else "store_true"
            help_text = f"turn off: {f.metadata['help']} (on by default)" \
                if f.default else f"turn on: {f.metadata['help']} (off by default)"
            group.add_argument(flag, dest=f.name, action=action, default=None, help=help_text)
        else:
            type_name = str(getattr(f.type, "__name__", f.type))
            kind = int if type_name.startswith("int") else str if type_name.startswith("str") else float
            span = field_range(f.name)
            if span is not None:
                help_text = f"{help_text}; {span[0]:g} to {span[1]:g}"
            if is_advanced(f.name):
                help_text = f"(advanced: the domain vote) {help_text}"
            # the range is checked where every caller's values are (LookupConfig), so a bad value is the
            # command's one-line error, as any other bad input
            group.add_argument(flag, dest=f.name, type=kind, default=None, metavar=f.name.upper(), help=help_text)


def config_from_args(args: argparse.Namespace) -> LookupConfig:
    overrides = {f.name: getattr(args, f.name) for f in fields(LookupConfig) if getattr(args, f.name, None) is not None}
    return LookupConfig().with_overrides(overrides)

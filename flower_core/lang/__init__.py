"""The languages the framework speaks to the model in: one catalogue module per language, one ``TEXTS`` dict each.

    flower_core/lang/zh.py   the seed's texts, verbatim (SEED: flower_core used directly speaks it)
    flower_core/lang/en.py   English (the bridge's default)
    catalogue("en")          -> Catalogue: cat["inbox.empty"], cat.fill("share.shared", path=...)

A language is chosen per run and handed down explicitly (``HumanChannel(language=...)``,
``starter_flow(language=...)``), never read from a global, so two runs in one process may differ.
Adding a language is adding one module here with the same keys and placeholders as ``zh.py``
(tests/core/test_lang.py holds every catalogue to that).
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType
from typing import Any

__all__ = ["SEED", "Catalogue", "LanguageError", "available", "catalogue"]

SEED = "zh"  # the original flower's language: what flower_core says when nobody chose


class LanguageError(ValueError):
    """A language code with no catalogue module."""


@dataclass(frozen=True)
class Catalogue:
    """One language's texts, read by key; ``fill`` formats a text that has placeholders."""

    code: str
    texts: MappingProxyType[str, str]

    def __getitem__(self, key: str) -> str:
        return self.texts[key]

    def fill(self, key: str, **values: Any) -> str:
        return self.texts[key].format(**values)


def available() -> tuple[str, ...]:
    """The language codes there is a catalogue module for, sorted."""
    return tuple(sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")))


@cache
def _load(code: str) -> Catalogue:
    module = importlib.import_module(f"{__name__}.{code}")
    return Catalogue(code, MappingProxyType(dict(module.TEXTS)))


def catalogue(language: str | Catalogue | None = None) -> Catalogue:
    """The catalogue of ``language`` (a code such as "en"); None gives the seed's. LanguageError for an unknown code."""
    if isinstance(language, Catalogue):
        return language
    code = SEED if language is None else str(language).strip().lower()
    if code not in available():
        raise LanguageError(f"unknown language {language!r}; choose from {', '.join(available())}")
    return _load(code)

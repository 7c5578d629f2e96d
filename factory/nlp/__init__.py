"""NER and normalisation for English and Russian.

* ``factory.nlp.pipeline.annotate_chunks(store, lang, settings, run_id, chunk_ids=None, progress=True)``:
  mentions and alias links for the store's chunks (called by ``factory ingest``).
* ``factory.nlp.keys``: ``entity_key``, ``lemmas``, ``normalize``, ``translit``: the
  keys mentions are grouped by, and what the leakage validator compares.
* ``factory.nlp.ru_names``: Russian person names read as one name (case/gender frame,
  surnames, initials); ``entity_key`` uses it for PER spans.
* ``factory.nlp.name_lists``: the curated lists of one entity's names
  (``names/<lang>.yaml``) that the corpus identity step (``factory.graph.identity``) uses.
* ``factory.nlp.identity_eval``: scoring a store's ``mention_identities`` against a gold set.
* ``factory.nlp.models.load_pipeline(lang)``: the spaCy pipelines (English
  ``en_core_web_sm`` NER with pinned file hashes; Russian natasha NER as a spaCy
  component with date/number rules).
"""

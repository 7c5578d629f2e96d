"""NER and normalisation for English and Russian.

* ``factory.nlp.pipeline.annotate_chunks(store, lang, settings, run_id, chunk_ids=None, progress=True)``:
  mentions and alias links for the store's chunks (called by ``factory ingest``).
* ``factory.nlp.keys``: ``entity_key``, ``lemmas``, ``normalize``, ``translit``: the
  keys mentions are grouped by, and what the leakage validator compares.
* ``factory.nlp.models.load_pipeline(lang)``: the spaCy pipelines (English
  ``en_core_web_sm`` NER with pinned file hashes; Russian natasha NER as a spaCy
  component with date/number rules).
"""

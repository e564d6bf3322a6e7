"""Rules of the ``gpulease-guardrails`` policy pack, one module per rule family (see ``pack.py``)."""

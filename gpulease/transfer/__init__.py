"""``gpulease push`` and ``gpulease pull``: moving files between a laptop and a stack's bucket."""

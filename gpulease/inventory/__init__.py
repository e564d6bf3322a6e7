"""Inventory and reaper for gpulease-managed AWS resources: list what exists, sweep what outlived its deadline."""

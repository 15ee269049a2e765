"""Checks of an export before launch: each engine version's start-up rules, run as data."""

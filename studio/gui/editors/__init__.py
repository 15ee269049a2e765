"""Editors and dialogs beside the panels: load, speculative decoding, engine, export."""

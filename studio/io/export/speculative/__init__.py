"""Speculative decoding in an export: the drafter settings each engine accepts."""

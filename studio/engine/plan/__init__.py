"""The plan of one layout: evaluation, rules and their warnings, explanations, result records."""

"""What the stakeholder report says, as plain data: content, per-node rows, summary."""

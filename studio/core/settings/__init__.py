"""Project settings beyond the model, hardware and layout: prompt reuse with KV tiers, and the Fleet plan's settings."""

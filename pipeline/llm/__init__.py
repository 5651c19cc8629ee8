"""Judge services: providers and their batch APIs, admission (rate limits, token budget),
token counting, prices and the content-addressed judge cache."""
